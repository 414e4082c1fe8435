# Quickstart: Adam (the paper's weight decay 4e-4, an lr for training from
# scratch), 10 epochs of 15 batches, lr x 0.3 after 7, evaluation every 2.
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='Adam', lr=1e-3, weight_decay=4e-4),
    paramwise_cfg=dict(custom_keys={'embedding': dict(lr_mult=10.0)}))
param_scheduler = [
    dict(type='MultiStepLR', by_epoch=True, milestones=[7], gamma=0.3)
]
train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=10, val_interval=2)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
