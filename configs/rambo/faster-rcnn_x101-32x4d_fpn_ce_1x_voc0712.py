# Faster R-CNN ResNeXt101-32x4d-FPN, cross-entropy, VOC07+12 (RaMBO paper,
# Table 5: 83.2 AP50 paper number), the backbone of MMDetection's
# `faster-rcnn_x101-32x4d_fpn_1x_coco.py`.
# Batch: 8 images per process; lr 0.005 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = './faster-rcnn_r50_fpn_ce_1x_voc0712.py'

model = dict(
    backbone=dict(
        type='ResNeXt',
        depth=101,
        groups=32,
        base_width=4,
        init_cfg=dict(
            type='Pretrained', checkpoint='open-mmlab://resnext101_32x4d')))
