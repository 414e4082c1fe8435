# Budget phase of the longer dense confirmation
# (`confirm_dense_long.py`): at which epoch has focal loss's val curve
# flattened? Selection only (`select_only = True`): trained and scored on
# val, never tested.
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dense_budget.py --dry-run
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dense_budget.py --phase select --jobs 1
#   python -m rankloss_lab.analysis.budget lab/rankloss_lab/studies/digitsvoc_dense_budget.py
# Why: in `digitsvoc_dense_fixed_16e` every val curve still rose at epoch 16,
# so its test measured how fast each loss learns from scratch in 16 epochs.
# The confirmation trains for as long as focal needs to level off; focal is
# the baseline both hypotheses are measured against.
#
# The runs: RetinaNet and ATSS with focal loss, each at the lr
# `digitsvoc_dense_fixed_16e` selected for it on val (seed 5, one factor-2
# grid 0.005 ... 0.16; the shipped configs' lrs: RetinaNet 0.04, ATSS 0.02),
# with seeds 5 and 11, 48 epochs at constant lr (no lr drop: a drop would
# end the rise wherever it is placed), val AP50 after every epoch
# (`val_curve` of each run record).
#
# The rule, fixed before these runs (`lab/rankloss_lab/analysis/budget.py`):
# the mean val AP50 over the two seeds, smoothed over 3 epochs (trailing),
# flattens at the first epoch E at which it is at least 1 % and none of the
# next 8 epochs exceeds it by 1 point or more. The confirmation budget is
# the larger E of the two detectors, rounded up to a multiple of 4, with
# lr / 10 after 3/4 of it (as 16 epochs drop after 12). The 3-epoch
# smoothing keeps one noisy evaluation of 160 val images from ending the
# curve early; the 8-epoch look-ahead is half the earlier budget. A curve
# that has not flattened by epoch 40 (8 epochs before the end) decides no
# budget: a longer budget study must.
#
# Cost: a 16-epoch run took about 660 s with 2 jobs on a 2-core CPU, so 4
# runs of 48 epochs about 4 x 3 x 660 s = 2.2 hours; 48 epochs is three
# times the earlier budget, enough for an E up to 40.
description = """Budget phase (selection only, never tested): RetinaNet and
ATSS R18-w32 FPN **from scratch** with focal loss, 48 epochs at constant lr,
batch 8, DigitsVOC train (384 images) / val (160), seeds 5 and 11; the val
curves decide the budget of `confirm_dense_long`."""
data = dict(
    root='data/digits_voc/VOCdevkit',
    make=['tools/dataset_converters/make_digits_voc.py', '{root}'])
select_only = True
select_seeds = [5, 11]
baseline = 'retina_focal'
_epochs = 48
# the test-time threshold of `digitsvoc_dense_fixed_16e` (its val AP50 too);
# the schedule: the configs' MultiStepLR (`param_scheduler[1]`) kept, with
# no drop
options = [
    'model.test_cfg.score_thr=0.0', f'train_cfg.max_epochs={_epochs}',
    f'param_scheduler.1.end={_epochs}', 'param_scheduler.1.gamma=1.0'
]
_atss = 'configs/dense/atss/atss_r18-w32_fpn_{}_16e_digitsvoc.py'
_retina = 'configs/dense/retinanet/retinanet_r18-w32_fpn_{}_16e_digitsvoc.py'
methods = dict(
    retina_focal=dict(label='RetinaNet, focal loss',
                      config=_retina.format('focal'), lrs=[0.04]),
    atss_focal=dict(label='ATSS, focal loss', config=_atss.format('focal'),
                    lrs=[0.02]),
)
