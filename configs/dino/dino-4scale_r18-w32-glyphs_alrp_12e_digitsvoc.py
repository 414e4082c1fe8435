# DINO on DigitsVOC trained by aLRP Loss (`ALRPDINOHead`, `./_base_/alrp.py`),
# the twin of `dino-4scale_r18-w32-glyphs_focal_12e_digitsvoc.py` in the loss
# and the self-balance hook only. lr and schedule: focal's (AdamW 0.0004, 12
# epochs), not the aLRP paper's (why: `./_base_/alrp.py`). Not selected on
# val: no study has run this config.
# Batch: 8 images per process; lr 0.0004 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './dino-4scale_r18-w32-glyphs_focal_12e_digitsvoc.py', './_base_/alrp.py'
]

model = dict(bbox_head=_base_.alrp_head)
custom_hooks = _base_.alrp_hooks
