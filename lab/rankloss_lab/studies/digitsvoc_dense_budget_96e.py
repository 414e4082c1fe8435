# Budget phase, continued for RetinaNet: `digitsvoc_dense_budget.py` found
# ATSS focal's val curve flat at epoch 37, but RetinaNet focal's still rising
# at epoch 48 (its rule: "a curve that has not flattened by epoch 40 decides
# no budget: a longer budget study must"). The same runs (RetinaNet focal,
# lr 0.04, seeds 5 and 11, constant lr) continued to 96 epochs, judged by the
# same rule (`lab/rankloss_lab/analysis/budget.py`), written before this run.
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dense_budget_96e.py --phase select --jobs 2
#   python -m rankloss_lab.analysis.budget lab/rankloss_lab/studies/digitsvoc_dense_budget_96e.py
# Each run resumes the 48-epoch run of `digitsvoc_dense_budget` (its work
# folder copied, without its result; MMEngine's resume restores the model,
# optimizer, scheduler and epoch, and the sampler's order is seed + epoch).
# At constant lr this continues that run; it is not bit for bit the run
# that trained 96 epochs from the start, since the focal config has no
# RandomStateHook and the augmentations' random state restarts from the
# seed at the resume. Its first 48 epochs are the earlier record's.
_base_ = './digitsvoc_dense_budget.py'
description = """Budget phase, RetinaNet continued (selection only, never
tested): RetinaNet R18-w32 FPN **from scratch** with focal loss, 96 epochs at
constant lr, batch 8, DigitsVOC train (384 images) / val (160), seeds 5 and
11; with `digitsvoc_dense_budget`'s ATSS curves, the budget of
`confirm_dense_long`."""
_epochs = 96
options = [
    'model.test_cfg.score_thr=0.0', f'train_cfg.max_epochs={_epochs}',
    f'param_scheduler.1.end={_epochs}', 'param_scheduler.1.gamma=1.0'
]
methods = dict(
    _delete_=True,
    retina_focal=dict(
        label='RetinaNet, focal loss',
        config='configs/dense/retinanet/'
        'retinanet_r18-w32_fpn_focal_16e_digitsvoc.py',
        lrs=[0.04]))
