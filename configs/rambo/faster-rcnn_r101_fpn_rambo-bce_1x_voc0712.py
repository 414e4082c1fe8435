# Faster R-CNN R101-FPN with RaMBO + sigmoid CE (`MixedRankLoss`), VOC07+12:
# `faster-rcnn_r50_fpn_rambo-bce_1x_voc0712.py` with the backbone of
# `faster-rcnn_r101_fpn_ce_1x_voc0712.py`. Not trained in this project.
_base_ = './faster-rcnn_r50_fpn_rambo-bce_1x_voc0712.py'

model = dict(
    backbone=dict(
        depth=101,
        init_cfg=dict(
            type='Pretrained', checkpoint='torchvision://resnet101')))
