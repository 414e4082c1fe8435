# Faster R-CNN ResNeXt101-32x4d-FPN with RaMBO + sigmoid CE
# (`MixedRankLoss`), VOC07+12: `faster-rcnn_r50_fpn_rambo-bce_1x_voc0712.py`
# with the backbone of `faster-rcnn_x101-32x4d_fpn_ce_1x_voc0712.py`. Not
# trained in this project.
_base_ = './faster-rcnn_r50_fpn_rambo-bce_1x_voc0712.py'

model = dict(
    backbone=dict(
        type='ResNeXt',
        depth=101,
        groups=32,
        base_width=4,
        init_cfg=dict(
            type='Pretrained', checkpoint='open-mmlab://resnext101_32x4d')))
