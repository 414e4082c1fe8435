# RaMBO Sec. 5.1: ImageNet-pretrained ResNet-50, frozen BatchNorm statistics,
# average pooling, 512-d linear embedding, L2-normalised. No loss: the recipes
# of `../losses/` add one. `model.backbone.init_cfg=None`: no download.
model = dict(
    type='RetrievalModel',
    data_preprocessor=dict(
        type='ImgDataPreprocessor', mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375], bgr_to_rgb=True),
    backbone=dict(
        type='ResNet', depth=50, num_stages=4, out_indices=(3, ),
        frozen_stages=-1, norm_cfg=dict(type='BN', requires_grad=True),
        norm_eval=True, style='pytorch',
        init_cfg=dict(type='Pretrained', checkpoint='torchvision://resnet50')),
    in_channels=2048,
    embed_dim=512,
    pooling='avg')
