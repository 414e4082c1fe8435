# A small ResNet-18 (16 base channels, 1 input channel, trained from scratch,
# BatchNorm trained) for the 32x32 grayscale digits: 128 channels pooled into
# a 64-d embedding. Fast enough to train in a few minutes on 2 CPU cores.
model = dict(
    type='RetrievalModel',
    data_preprocessor=dict(
        type='ImgDataPreprocessor', mean=[127.5], std=[127.5]),
    backbone=dict(
        type='ResNet',
        depth=18,
        in_channels=1,
        base_channels=16,
        num_stages=4,
        out_indices=(3, ),
        frozen_stages=-1,
        norm_cfg=dict(type='BN', requires_grad=True),
        norm_eval=False,
        style='pytorch',
        init_cfg=None),
    in_channels=128,
    embed_dim=64,
    pooling='avg',
    loss=dict(
        type='RaMBORecallLoss',
        weighting='log',
        lambda_val=0.2,
        margin=0.02,
        memory=3))
