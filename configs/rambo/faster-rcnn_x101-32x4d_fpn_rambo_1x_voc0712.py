# Faster R-CNN ResNeXt101-32x4d-FPN with the RaMBO AP loss, VOC07+12 (RaMBO
# paper, Table 5: 83.6 AP50 paper number, 83.2 for CE).
_base_ = './faster-rcnn_r50_fpn_rambo_1x_voc0712.py'

model = dict(
    backbone=dict(
        type='ResNeXt',
        depth=101,
        groups=32,
        base_width=4,
        init_cfg=dict(
            type='Pretrained', checkpoint='open-mmlab://resnext101_32x4d')))
