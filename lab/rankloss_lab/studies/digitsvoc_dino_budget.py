# Budget phase of the DigitsVOC DINO study (`digitsvoc_dino_12e.py`): at
# which epoch has focal loss's val curve flattened? Selection only
# (`select_only = True`): trained and scored on val, never tested.
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dino_budget.py --dry-run
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dino_budget.py --phase select --jobs 2
#   python -m rankloss_lab.analysis.budget lab/rankloss_lab/studies/digitsvoc_dino_budget.py
# Why: the first selection runs of `digitsvoc_dino_12e` (focal, seed 5)
# still rose at epoch 12 at lr 0.0002 (val AP50 25.0 at epoch 9, 29.2 at
# 12), so its rule (focal's best val AP50 over epochs 10-12 within 1 point
# of its best over 7-9) would fail and ask for a longer schedule before any
# test run. Its selection was stopped after those runs: lrs chosen at 12
# epochs need not hold at a longer budget, so the methods are selected
# again at the budget this study finds.
#
# The runs: DINO (3 + 3 layers, 100 queries, glyph-pretrained R18-w32) with
# focal loss at lr 0.0002 (the configs' lr, the better of the two finished
# 12-epoch grid points on val), seeds 5 and 11, 36 epochs at constant lr
# (no lr drop), val AP50 after every epoch (`val_curve` of each record).
# The rule, fixed before these runs, is that of the dense budget study
# (`lab/rankloss_lab/analysis/budget.py`): the mean val AP50 over the two
# seeds, smoothed over 3 epochs, flattens at the first epoch E at which
# none of the next 8 epochs exceeds it by 1 point or more; the DINO study's
# budget is E rounded up to a multiple of 4, with lr / 10 after 3/4 of it.
# A curve that has not flattened by epoch 28 decides no budget.
#
# Cost: one epoch with its val is about 125 CPU s (2.2 s per step of 8
# images, one thread), so 2 runs of 36 epochs are about 2.5 CPU hours:
# 1.3 hours with `--jobs 2` on two free cores.
_base_ = './digitsvoc_pretrained_12e.py'  # data, the glyph backbone
description = """Budget phase (selection only, never tested): DINO-4scale
with 3 encoder and 3 decoder layers, 100 queries, R18-w32 backbone
pretrained on printed glyphs, focal loss, lr 0.0002, 36 epochs at constant
lr, batch 8, DigitsVOC train (384 images) / val (160), seeds 5 and 11; the
val curves decide the budget of the DigitsVOC DINO study."""
select_only = True
preregistered = False  # no test phase
hypotheses = []
select_seeds = [5, 11]
baseline = 'focal'
_epochs = 36
# the configs' MultiStepLR (`param_scheduler[0]`) kept, with no drop
options = [
    f'train_cfg.max_epochs={_epochs}', f'param_scheduler.0.end={_epochs}',
    'param_scheduler.0.gamma=1.0'
]
methods = dict(
    _delete_=True,  # not the Faster R-CNN study's methods
    focal=dict(
        label='DINO, focal loss',
        config='configs/dino/dino-4scale_r18-w32-glyphs_focal_12e_digitsvoc.py',
        lrs=[0.0002]),
)
