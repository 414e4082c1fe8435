# DINO on DigitsVOC trained by RaMBO beside the stock focal loss
# (`RaMBODINOHead`, `./_base_/rank-losses.py`): the focal twin with this
# loss only. Its lr, selected on val at 12 epochs (mean over seeds 5 and 11,
# lab/rankloss_lab/studies/digitsvoc_dino_long.py), is focal's: 0.0004, by
# the stability rule (its best, 0.0008, has a collapsed 0.0016 above it).
# Batch: 8 images per process; lr 0.0004 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './dino-4scale_r18-w32-glyphs_focal_12e_digitsvoc.py',
    './_base_/rank-losses.py'
]

model = dict(bbox_head=_base_.rambo_focal_head)
