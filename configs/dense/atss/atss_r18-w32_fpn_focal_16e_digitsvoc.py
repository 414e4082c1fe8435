# ATSS on DigitsVOC (`tools/make_digits_voc.py`) with focal loss: the baseline
# twin of `atss_r18-w32_fpn_rambo_16e_digitsvoc.py`. Data, pipeline,
# 16-epoch schedule, batch 8, warm-up, clipping and seed of the two-stage
# DigitsVOC study; the model is `mmdet::atss/atss_r50_fpn_1x_coco.py`'s on the
# study's from-scratch ResNet-18 of 32 base channels, 64-channel FPN and head.
_base_ = '../../digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py'

model = dict(
    _delete_=True,
    type='ATSS',
    data_preprocessor=dict(
        type='DetDataPreprocessor',
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        bgr_to_rgb=True,
        pad_size_divisor=32),
    backbone=dict(
        type='ResNet',
        depth=18,
        base_channels=32,
        num_stages=4,
        out_indices=(0, 1, 2, 3),
        frozen_stages=-1,
        norm_cfg=dict(type='BN', requires_grad=True),
        norm_eval=False,
        style='pytorch',
        init_cfg=None),
    neck=dict(
        type='FPN',
        in_channels=[32, 64, 128, 256],
        out_channels=64,
        start_level=1,
        add_extra_convs='on_output',
        num_outs=5),
    bbox_head=dict(
        type='ATSSHead',
        num_classes=10,
        in_channels=64,
        stacked_convs=4,
        feat_channels=64,
        # one anchor per location at half MMDetection's scale (32 to 512 px)
        # for digits of 14 to 60 px, as in the two-stage study
        anchor_generator=dict(
            type='AnchorGenerator',
            ratios=[1.0],
            octave_base_scale=4,
            scales_per_octave=1,
            strides=[8, 16, 32, 64, 128]),
        bbox_coder=dict(
            type='DeltaXYWHBBoxCoder',
            target_means=[.0, .0, .0, .0],
            target_stds=[0.1, 0.1, 0.2, 0.2]),
        loss_cls=dict(
            type='FocalLoss',
            use_sigmoid=True,
            gamma=2.0,
            alpha=0.25,
            loss_weight=1.0),
        loss_bbox=dict(type='GIoULoss', loss_weight=2.0),
        loss_centerness=dict(
            type='CrossEntropyLoss', use_sigmoid=True, loss_weight=1.0)),
    train_cfg=dict(
        assigner=dict(type='ATSSAssigner', topk=9),
        allowed_border=-1,
        pos_weight=-1,
        debug=False),
    test_cfg=dict(
        nms_pre=1000,
        min_bbox_size=0,
        score_thr=0.05,
        nms=dict(type='nms', iou_threshold=0.6),
        max_per_img=100))
# lr: MMDetection's ATSS rate (0.01, there at batch 16), not the two-stage
# study's 0.04; the study (tools/studies/digitsvoc_dense_atss_16e.py) selects
# each loss's rate on val.
optim_wrapper = dict(optimizer=dict(lr=0.01))
