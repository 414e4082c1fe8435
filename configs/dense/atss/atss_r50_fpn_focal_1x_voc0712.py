# ATSS R50 FPN with focal loss on VOC07+12 (VOCMetric AP50, 11 points).
# MMDetection has no ATSS VOC config: this is its RetinaNet VOC config (data,
# 4 x 3 epochs, lr) with `mmdet::atss/atss_r50_fpn_1x_coco.py`'s detector
# (the same values, 20 classes; a test compares them).
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = 'mmdet::pascal_voc/retinanet_r50_fpn_1x_voc0712.py'

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)

model = dict(
    type='ATSS',
    neck=dict(add_extra_convs='on_output'),
    bbox_head=dict(
        type='ATSSHead',
        # one anchor per location (RetinaNet: 9)
        anchor_generator=dict(
            ratios=[1.0], octave_base_scale=8, scales_per_octave=1),
        bbox_coder=dict(target_stds=[0.1, 0.1, 0.2, 0.2]),
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

auto_scale_lr = dict(enable=True, base_batch_size=16)
