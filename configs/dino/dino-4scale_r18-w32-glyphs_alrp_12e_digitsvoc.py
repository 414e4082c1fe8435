# DINO on DigitsVOC trained by aLRP Loss (`ALRPDINOHead`,
# `./_base_/alrp.py`): the twin of
# `dino-4scale_r18-w32-glyphs_focal_12e_digitsvoc.py`, which differs in the
# loss (aLRP in place of focal, L1 and GIoU) and the self-balance hook only.
# lr and schedule: focal's (AdamW 0.0002, 12 epochs). The aLRP paper's
# higher lr and 100-epoch schedule are its SGD recipe for dense detectors,
# where the step is the lr times the loss's gradient; AdamW's step does not
# grow with the gradient's scale, DINO clips the gradient norm at 0.1, and
# 12 epochs is what the DigitsVOC DINO study's budget holds. Not selected
# on val: no study has run this config.
# Batch: 8 images per process; lr 0.0002 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './dino-4scale_r18-w32-glyphs_focal_12e_digitsvoc.py', './_base_/alrp.py'
]

model = dict(bbox_head=_base_.alrp_head)
custom_hooks = _base_.alrp_hooks
