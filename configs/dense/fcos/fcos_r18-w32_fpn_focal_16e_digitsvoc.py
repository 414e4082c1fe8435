# FCOS on DigitsVOC with focal loss, the baseline of the `_16e_` FCOS twins:
# the R50 COCO twin's head narrowed to the small FPN, with the focal loss and
# test settings of `../_base_/retinanet_r18-w32_fpn_digitsvoc.py`; the rest
# is the DigitsVOC config's.
# Batch: 8 images per process; lr 0.01 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    '../../digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py',
    '../_base_/retinanet_r18-w32_fpn_digitsvoc.py'
]

model = dict(
    _delete_=True,
    type='FCOS',
    data_preprocessor=_base_.model.data_preprocessor,
    backbone=_base_.model.backbone,
    neck=dict(
        _base_.model.neck,
        start_level=1,
        add_extra_convs='on_output',
        relu_before_extra_convs=True),
    bbox_head=dict(
        type='FCOSHead',
        num_classes=_base_.retinanet_head.num_classes,
        in_channels=_base_.retinanet_head.in_channels,
        stacked_convs=_base_.retinanet_head.stacked_convs,
        feat_channels=_base_.retinanet_head.feat_channels,
        strides=_base_.retinanet_head.anchor_generator.strides,
        # half MMDetection's ranges (which start at 64 px on P3) for digits
        # of 14 to 60 px, as the anchors of the other DigitsVOC detectors
        regress_ranges=((-1, 32), (32, 64), (64, 128), (128, 256),
                        (256, 1e8)),
        norm_on_bbox=True,
        centerness_on_reg=True,
        center_sampling=True,
        conv_bias=True,
        loss_cls=_base_.retinanet_head.loss_cls,
        loss_bbox=dict(type='GIoULoss', loss_weight=1.0),
        loss_centerness=dict(
            type='CrossEntropyLoss', use_sigmoid=True, loss_weight=1.0)),
    test_cfg=dict(
        _base_.retinanet_test_cfg, nms=dict(type='nms', iou_threshold=0.6)))
# lr: selected on val (mean of seeds 5 and 11) by
# lab/rankloss_lab/studies/digitsvoc_dense_fcos_16e.py (results:
# docs/evidence/digitsvoc_dense_fcos_16e.md), as for its twins.
optim_wrapper = dict(optimizer=dict(lr=0.01))
