# Study: the from-scratch comparison at the quickstart's budget (8 epochs,
# lr / 10 after 6), half the benchmark's 16: does the gap between the losses
# depend on the budget? Same grids, seeds and protocol as
# `digitsvoc_scratch_16e.py` (each loss's lr chosen again on val at this
# budget); about 5 minutes a run on the 2-core CPU VM (two at a time).
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_scratch_8e.py --jobs 2 \
#       --methods ce rambo
_base_ = './digitsvoc_scratch_16e.py'
description = """Faster R-CNN R18-w32 FPN **from scratch**, 8 epochs (lr / 10
after 6; the quickstart's budget), batch 8, DigitsVOC train (384 images) / val
(160) / test (320)."""
options = [
    'train_cfg.max_epochs=8', 'param_scheduler.1.end=8',
    'param_scheduler.1.milestones=[6]'
]
