# DINO-4scale R50 on COCO trained by aLRP Loss (`ALRPDINOHead`,
# `./_base_/alrp.py`): aLRP's classification and localisation components in
# place of every focal, L1 and GIoU loss of DINO. Not trained in this
# project (no GPU).
# lr and schedule: the focal twin's (MMDetection's AdamW 0.0001, 12 epochs).
# The aLRP paper's higher lr and 100-epoch schedule are its SGD recipe for
# dense detectors, where the step is the lr times the loss's gradient;
# AdamW's step does not grow with the gradient's scale, and DINO clips the
# gradient norm at 0.1. Not selected on val.
# Batch: 2 images per process; lr 0.0001 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./dino-4scale_r50_focal_12e_coco.py', './_base_/alrp.py']

model = dict(bbox_head=_base_.alrp_head)
custom_hooks = _base_.alrp_hooks
