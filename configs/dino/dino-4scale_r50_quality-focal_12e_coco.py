# DINO-4scale R50 on COCO with Quality Focal Loss (the stock `DINOHead`'s
# IoU-aware branch, `./_base_/rank-losses.py`): the IoU-aware baseline of
# the rank losses. Not trained in this project (no GPU).
# Batch: 2 images per process; lr 0.0001 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./dino-4scale_r50_focal_12e_coco.py', './_base_/rank-losses.py']

model = dict(bbox_head=_base_.quality_focal_head)
