# DINO on DigitsVOC with focal loss (MMDetection's DINOHead as it ships), the
# baseline of the rank-loss DINO twins, sized for a 2-core CPU: DINO-4scale
# (`mmdet::dino/dino-4scale_r50_8xb2-12e_coco.py`) with 3 + 3 layers (6 + 6),
# FFNs of 1024 (2048), 100 queries (900: the encoder offers 340 tokens at
# 128 px), 50 denoising queries (100) and its 256 channels (its decoder
# encodes reference points in 512), on the glyph-pretrained backbone of
# `../digitsvoc/faster-rcnn_r18-w32-glyphs_fpn_ce_12e_digitsvoc.py` (make it
# first): DETRs learn slowly from scratch. The rest is the DigitsVOC
# config's, with MMDetection's DINO optimiser (AdamW, backbone lr x 0.1,
# clip 0.1) and 12-epoch schedule. lr 0.0004: selected on val at these 12
# epochs (mean over seeds 5 and 11, lab/rankloss_lab/studies/
# digitsvoc_dino_long.py; its test trains 36 epochs, lr / 10 after 27).
# Batch: 8 images per process; lr 0.0004 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = '../digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py'

embed_dims = 256
max_epochs = 12
pretrained = 'checkpoints/r18-w32_glyphs.pth'
model = dict(
    _delete_=True,
    type='DINO',
    num_queries=100,
    with_box_refine=True,
    as_two_stage=True,
    data_preprocessor=_base_.model.data_preprocessor,
    backbone=dict(
        _base_.model.backbone,
        out_indices=(1, 2, 3),
        frozen_stages=1,
        norm_eval=True,
        init_cfg=dict(type='Pretrained', checkpoint=pretrained)),
    neck=dict(
        type='ChannelMapper',
        in_channels=[64, 128, 256],
        kernel_size=1,
        out_channels=embed_dims,
        act_cfg=None,
        norm_cfg=dict(type='GN', num_groups=32),
        num_outs=4),
    encoder=dict(
        num_layers=3,
        layer_cfg=dict(
            self_attn_cfg=dict(
                embed_dims=embed_dims, num_levels=4, dropout=0.0),
            ffn_cfg=dict(
                embed_dims=embed_dims,
                feedforward_channels=4 * embed_dims,
                ffn_drop=0.0))),
    decoder=dict(
        num_layers=3,
        return_intermediate=True,
        layer_cfg=dict(
            self_attn_cfg=dict(
                embed_dims=embed_dims, num_heads=8, dropout=0.0),
            cross_attn_cfg=dict(
                embed_dims=embed_dims, num_levels=4, dropout=0.0),
            ffn_cfg=dict(
                embed_dims=embed_dims,
                feedforward_channels=4 * embed_dims,
                ffn_drop=0.0)),
        post_norm_cfg=None),
    positional_encoding=dict(
        num_feats=embed_dims // 2,
        normalize=True,
        offset=0.0,
        temperature=20),
    bbox_head=dict(
        type='DINOHead',
        num_classes=10,
        embed_dims=embed_dims,
        sync_cls_avg_factor=True,
        loss_cls=dict(
            type='FocalLoss',
            use_sigmoid=True,
            gamma=2.0,
            alpha=0.25,
            loss_weight=1.0),
        loss_bbox=dict(type='L1Loss', loss_weight=5.0),
        loss_iou=dict(type='GIoULoss', loss_weight=2.0)),
    dn_cfg=dict(
        label_noise_scale=0.5,
        box_noise_scale=1.0,
        group_cfg=dict(dynamic=True, num_groups=None, num_dn_queries=50)),
    train_cfg=dict(
        assigner=dict(
            type='HungarianAssigner',
            match_costs=[
                dict(type='FocalLossCost', weight=2.0),
                dict(type='BBoxL1Cost', weight=5.0, box_format='xywh'),
                dict(type='IoUCost', iou_mode='giou', weight=2.0)
            ])),
    test_cfg=dict(max_per_img=100))

train_cfg = dict(max_epochs=max_epochs)
optim_wrapper = dict(
    _delete_=True,
    type='OptimWrapper',
    optimizer=dict(type='AdamW', lr=0.0004, weight_decay=0.0001),
    clip_grad=dict(max_norm=0.1, norm_type=2),
    paramwise_cfg=dict(custom_keys={'backbone': dict(lr_mult=0.1)}))
param_scheduler = [
    dict(
        type='MultiStepLR',
        begin=0,
        end=max_epochs,
        by_epoch=True,
        milestones=[11],
        gamma=0.1)
]
