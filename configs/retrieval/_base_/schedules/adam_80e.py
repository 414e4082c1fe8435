# RaMBO Appendix A: Adam, weight decay 4e-4, batch 128, at most 80 epochs,
# learning rate dropped by 70 % after 35 epochs; the embedding layer gets a
# 10x learning rate (FastAP's default, which RaMBO follows). Dataset configs
# set the base learning rate (Table 9).
optim_wrapper = dict(
    type='OptimWrapper',
    optimizer=dict(type='Adam', lr=5e-6, weight_decay=4e-4),
    paramwise_cfg=dict(custom_keys={'embedding': dict(lr_mult=10.0)}))

param_scheduler = [
    dict(type='MultiStepLR', by_epoch=True, milestones=[35], gamma=0.3)
]

train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=80, val_interval=5)
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')

# The learning rates above are for one batch of 128 (on one GPU).
auto_scale_lr = dict(enable=False, base_batch_size=128)
