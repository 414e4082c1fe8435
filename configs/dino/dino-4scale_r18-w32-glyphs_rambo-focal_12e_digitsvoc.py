# DINO on DigitsVOC trained by RaMBO beside the stock focal loss
# (`RaMBODINOHead`, `./_base_/rank-losses.py`): the focal twin with this
# loss only, at focal's lr until
# lab/rankloss_lab/studies/digitsvoc_dino_12e.py selects its own on val.
# Batch: 8 images per process; lr 0.0002 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './dino-4scale_r18-w32-glyphs_focal_12e_digitsvoc.py',
    './_base_/rank-losses.py'
]

model = dict(bbox_head=_base_.rambo_focal_head)
