# Faster R-CNN R101-FPN with the mix (`../_base_/rambo-bce.py`) at the CE
# twin's lr, VOC07+12. Not trained in this project.
# Batch: 8 images per process; lr 0.005 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./faster-rcnn_r101_fpn_ce_1x_voc0712.py', '../_base_/rambo-bce.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_bce_loss)))
