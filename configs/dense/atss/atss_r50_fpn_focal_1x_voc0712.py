# ATSS R50 FPN with focal loss on VOC07+12 (VOCMetric AP50, 11 points): the
# baseline twin of `atss_r50_fpn_rambo_1x_voc0712.py`. MMDetection has no
# ATSS VOC config: this is its RetinaNet VOC config (data, 4 x 3 epochs, lr)
# with the model of `mmdet::atss/atss_r50_fpn_1x_coco.py` (the same values,
# 20 classes; a test compares them).
_base_ = 'mmdet::pascal_voc/retinanet_r50_fpn_1x_voc0712.py'

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)

model = dict(
    type='ATSS',
    neck=dict(add_extra_convs='on_output'),
    bbox_head=dict(
        _delete_=True,
        type='ATSSHead',
        num_classes=20,
        in_channels=256,
        stacked_convs=4,
        feat_channels=256,
        anchor_generator=dict(
            type='AnchorGenerator',
            ratios=[1.0],
            octave_base_scale=8,
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
        _delete_=True,
        assigner=dict(type='ATSSAssigner', topk=9),
        allowed_border=-1,
        pos_weight=-1,
        debug=False),
    test_cfg=dict(nms=dict(iou_threshold=0.6)))
