# ImageNet-pretrained ResNet-50 with frozen BatchNorm statistics, global
# average pooling, a 512-d linear embedding and L2 normalisation (RaMBO
# Sec. 5.1). The loss is the RaMBO recall loss with the CUB values of Table 9;
# dataset configs override lambda and margin. Set
# `model.backbone.init_cfg=None` to train without downloading the weights.
model = dict(
    type='RetrievalModel',
    data_preprocessor=dict(
        type='ImgDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        bgr_to_rgb=True),
    backbone=dict(
        type='ResNet',
        depth=50,
        num_stages=4,
        out_indices=(3, ),
        frozen_stages=-1,
        norm_cfg=dict(type='BN', requires_grad=True),
        norm_eval=True,
        style='pytorch',
        init_cfg=dict(type='Pretrained', checkpoint='torchvision://resnet50')),
    in_channels=2048,
    embed_dim=512,
    pooling='avg',
    loss=dict(
        type='RaMBORecallLoss',
        weighting='log',
        lambda_val=0.2,
        margin=0.02,
        memory=3))
