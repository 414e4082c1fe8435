# Faster R-CNN R101-FPN with the RaMBO AP loss, VOC07+12 (RaMBO paper, Table
# 5: 82.9 AP50 paper number, 82.4 for CE).
_base_ = './faster-rcnn_r50_fpn_rambo_1x_voc0712.py'

model = dict(
    backbone=dict(
        depth=101,
        init_cfg=dict(
            type='Pretrained', checkpoint='torchvision://resnet101')))
