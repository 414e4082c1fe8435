# DINO on DigitsVOC with RaMBO beside the focal loss (`RaMBODINOHead`)
# at the longer budget: its 12-epoch twin on the schedule of
# `./_base_/schedule_36e_digitsvoc.py` (its twin's bases: no chain over three
# files), the run that lab/rankloss_lab/studies/digitsvoc_dino_long.py tests.
# Batch: 8 images per process; lr 0.0004 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './dino-4scale_r18-w32-glyphs_focal_12e_digitsvoc.py',
    './_base_/rank-losses.py', './_base_/schedule_36e_digitsvoc.py'
]
model = dict(bbox_head=_base_.rambo_focal_head)
train_cfg = _base_.long_train_cfg
param_scheduler = _base_.long_param_scheduler
