# Budget phase of the DigitsVOC DINO study, continued: `digitsvoc_dino_budget`
# found focal's mean val curve not flat within its 36 epochs (smoothed, it
# still rose about 0.2 AP50 per epoch over epochs 24-36; its rule: "a curve
# that has not flattened by epoch 28 decides no budget"). The same runs
# (focal, lr 0.0002, seeds 5 and 11, constant lr) continued to 72 epochs,
# judged by the same rule (`lab/rankloss_lab/analysis/budget.py`), written
# before this run: a curve not flat by epoch 64 decides no budget.
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dino_budget_72e.py --phase select --jobs 2
#   python -m rankloss_lab.analysis.budget lab/rankloss_lab/studies/digitsvoc_dino_budget_72e.py
# Each run resumes the 36-epoch run of `digitsvoc_dino_budget` (its work
# folder copied, without its result; MMEngine's resume restores the model,
# optimizer, scheduler and epoch, and the sampler's order is seed + epoch),
# as `digitsvoc_dense_budget_96e` continued the dense runs. At constant lr
# this continues that run; it is not bit for bit the run that trained 72
# epochs from the start (the augmentations' random state restarts from the
# seed at the resume). Its first 36 epochs are the earlier record's.
# Cost: 36 epochs more per run, about 120 s each with two runs side by
# side on the 2-core machine: about 1.2 hours.
_base_ = './digitsvoc_dino_budget.py'
description = """Budget phase, continued (selection only, never tested):
DINO-4scale with 3 encoder and 3 decoder layers, 100 queries, R18-w32
backbone pretrained on printed glyphs, focal loss, lr 0.0002, 72 epochs at
constant lr, batch 8, DigitsVOC train (384 images) / val (160), seeds 5 and
11; the val curves decide the budget of `digitsvoc_dino_long`."""
_epochs = 72
options = [
    f'train_cfg.max_epochs={_epochs}', f'param_scheduler.0.end={_epochs}',
    'param_scheduler.0.gamma=1.0'
]
