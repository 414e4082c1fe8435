# DINO-4scale R50 on COCO trained by RaMBO beside the stock focal loss
# (`RaMBODINOHead`, `./_base_/rank-losses.py`) at every classification loss
# of DINO; neither BRS-DETR nor Rank-DETR uses RaMBO. Not trained here.
# Batch: 2 images per process; lr 0.0001 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./dino-4scale_r50_focal_12e_coco.py', './_base_/rank-losses.py']

model = dict(bbox_head=_base_.rambo_focal_head)
