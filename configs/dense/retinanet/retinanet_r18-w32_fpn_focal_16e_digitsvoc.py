# RetinaNet on DigitsVOC (`tools/make_digits_voc.py`) with focal loss: the
# baseline twin of `retinanet_r18-w32_fpn_rambo_16e_digitsvoc.py`. Data,
# pipeline, 16-epoch schedule (lr / 10 after 12), batch 8, warm-up, gradient
# clipping and seed are those of the two-stage DigitsVOC study
# (`configs/digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py`), and so
# are its preprocessing, backbone (a ResNet-18 of 32 base channels trained
# from scratch) and 64-channel FPN; the detector is MMDetection's RetinaNet
# (`mmdet::_base_/models/retinanet_r50_fpn.py`) with its head narrowed to 64
# channels.
_base_ = '../../digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py'

model = dict(
    _delete_=True,
    type='RetinaNet',
    data_preprocessor=_base_.model.data_preprocessor,
    backbone=_base_.model.backbone,
    neck=dict(_base_.model.neck, start_level=1, add_extra_convs='on_input'),
    bbox_head=dict(
        type='RetinaHead',
        num_classes=10,
        in_channels=64,
        stacked_convs=4,
        feat_channels=64,
        # anchors at half MMDetection's scale (16 to 406 px) for digits of
        # 14 to 60 px in 128 px images, as in the two-stage study
        anchor_generator=dict(
            type='AnchorGenerator',
            octave_base_scale=2,
            scales_per_octave=3,
            ratios=[0.5, 1.0, 2.0],
            strides=[8, 16, 32, 64, 128]),
        bbox_coder=dict(
            type='DeltaXYWHBBoxCoder',
            target_means=[.0, .0, .0, .0],
            target_stds=[1.0, 1.0, 1.0, 1.0]),
        loss_cls=dict(
            type='FocalLoss',
            use_sigmoid=True,
            gamma=2.0,
            alpha=0.25,
            loss_weight=1.0),
        loss_bbox=dict(type='L1Loss', loss_weight=1.0)),
    train_cfg=dict(
        assigner=dict(
            type='MaxIoUAssigner',
            pos_iou_thr=0.5,
            neg_iou_thr=0.4,
            min_pos_iou=0,
            ignore_iof_thr=-1),
        sampler=dict(type='PseudoSampler'),
        allowed_border=-1,
        pos_weight=-1,
        debug=False),
    test_cfg=dict(
        nms_pre=1000,
        min_bbox_size=0,
        score_thr=0.05,
        nms=dict(type='nms', iou_threshold=0.5),
        max_per_img=100))
# lr: selected on val by tools/studies/digitsvoc_dense_retinanet_16e.py from
# {0.005, 0.01, 0.02, 0.04, 0.08} (val AP50 0.5 / 4.2 / 4.1 / 9.3 / 11.0).
# This from-scratch RetinaNet is a weak, fragile baseline: test AP50 10.9,
# 8.6 and 0.0 for seeds 0, 1, 2 (docs/dense.md).
optim_wrapper = dict(optimizer=dict(lr=0.08))
