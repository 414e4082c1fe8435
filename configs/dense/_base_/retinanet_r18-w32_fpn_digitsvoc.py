# The one-stage detector parts of the DigitsVOC dense configs, as variables
# (docs/architecture.md#configs): MMDetection's RetinaNet head, assigner and
# test settings (`mmdet::_base_/models/retinanet_r50_fpn.py`), the head
# narrowed to the 64-channel FPN of `configs/digitsvoc/`, anchors at half
# MMDetection's scale (16 to 406 px) for digits of 14 to 60 px in 128 px
# images, as in the two-stage study.
retinanet_head = dict(
    type='RetinaHead',
    num_classes=10,
    in_channels=64,
    stacked_convs=4,
    feat_channels=64,
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
        type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25,
        loss_weight=1.0),
    loss_bbox=dict(type='L1Loss', loss_weight=1.0))
retinanet_train_cfg = dict(
    assigner=dict(
        type='MaxIoUAssigner',
        pos_iou_thr=0.5,
        neg_iou_thr=0.4,
        min_pos_iou=0,
        ignore_iof_thr=-1),
    sampler=dict(type='PseudoSampler'),
    allowed_border=-1,
    pos_weight=-1,
    debug=False)
retinanet_test_cfg = dict(
    nms_pre=1000,
    min_bbox_size=0,
    score_thr=0.05,
    nms=dict(type='nms', iou_threshold=0.5),
    max_per_img=100)
