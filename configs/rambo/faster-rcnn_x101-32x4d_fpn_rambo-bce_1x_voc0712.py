# Faster R-CNN ResNeXt101-32x4d-FPN with RaMBO + sigmoid CE (`MixedRankLoss`,
# `../_base_/rambo-bce.py`) at the CE twin's lr, VOC07+12: see
# `faster-rcnn_r50_fpn_rambo-bce_1x_voc0712.py`. Not trained in this project.
_base_ = ['./faster-rcnn_x101-32x4d_fpn_ce_1x_voc0712.py', '../_base_/rambo-bce.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_bce_loss)),
    test_cfg=dict(rcnn=dict(score_thr=0.0)))
