# RaMBO Appendix A: Adam, weight decay 4e-4, batch 128 (one GPU), at most 80
# epochs, lr x 0.3 after 35; the embedding layer gets 10x the lr (FastAP's
# default, which RaMBO follows). The configs set the lr (Table 9).
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
