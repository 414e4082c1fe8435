# Study: the from-scratch comparison at twice the benchmark's budget (32
# epochs, lr / 10 after 24), to test whether RaMBO's slower start closes
# with more training. Same grids, seeds and protocol as
# `digitsvoc_scratch_16e.py` (each loss's lr chosen again on val at this
# budget); about 18 minutes a run on the 2-core CPU VM.
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_scratch_32e.py --jobs 2 \
#       --methods ce rambo
_base_ = './digitsvoc_scratch_16e.py'
description = """Faster R-CNN R18-w32 FPN **from scratch**, 32 epochs (lr / 10
after 24), batch 8, DigitsVOC train (384 images) / val (160) / test (320)."""
options = [
    'train_cfg.max_epochs=32', 'param_scheduler.1.end=32',
    'param_scheduler.1.milestones=[24]'
]
