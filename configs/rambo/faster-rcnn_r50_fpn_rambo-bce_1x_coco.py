# Faster R-CNN R50-FPN on COCO with the mix (`../_base_/rambo-bce.py`) at
# the CE twin's lr. Not trained on COCO in this project (no COCO, no GPU).
# Batch: 2 images per process; lr 0.02 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./faster-rcnn_r50_fpn_ce_1x_coco.py', '../_base_/rambo-bce.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_bce_loss)))
