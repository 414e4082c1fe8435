# DINO-4scale R50 on COCO trained by aLRP Loss (`ALRPDINOHead`,
# `./_base_/alrp.py`) in place of every focal, L1 and GIoU loss. lr and
# schedule: the focal twin's (AdamW 0.0001, 12 epochs), not the aLRP paper's
# (why: `./_base_/alrp.py`). Not trained in this project (no GPU).
# Batch: 2 images per process; lr 0.0001 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./dino-4scale_r50_focal_12e_coco.py', './_base_/alrp.py']

model = dict(bbox_head=_base_.alrp_head)
custom_hooks = _base_.alrp_hooks
