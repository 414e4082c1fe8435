# Confirmation at equal test thresholds: Faster R-CNN, RaMBO + sigmoid CE
# (the mix) against cross-entropy, both at score_thr 0.05 and both at 0.
#   python tools/study.py lab/rankloss_lab/studies/confirm_frcnn_thresholds.py --freeze
#   python tools/study.py lab/rankloss_lab/studies/confirm_frcnn_thresholds.py --phase test --jobs 2
# Why: every earlier Faster R-CNN mix result tested the mix at 0 against
# cross-entropy at 0.05 (the CE config's threshold); the configs now ship
# 0.05 for both. One training per method and seed, tested at 0; its test
# detections are kept and re-scored at each of `score_thresholds`
# (rankloss_lab.study.detections: exact for Faster R-CNN, whose threshold
# acts before its per-class NMS and top-100 cut).
# Learning rates: the ones `digitsvoc_scratch_16e` selected on val (seed 0),
# as in `confirm_digitsvoc`; this study selects nothing (fair_selection =
# False: no grid here). Test seeds 30-34 took part in no study before; the
# fresh split `confirm_thr` holds 320 new images (synthesis seed 3, used by
# no other split) drawn from the digit images that train, val and test do
# not draw (the pool `confirm` and `confirm_long` draw from too; no
# selection ever saw it). Hypotheses one-sided, Holm over the two.
# Cost: 2 methods x 5 seeds = 10 trainings of 16 epochs (about 330 s each
# with 2 jobs on an idle 2-core CPU).
description = """Confirmation at equal test thresholds, from scratch, 16
epochs (lr / 10 after 12), batch 8: Faster R-CNN R18-w32, trained on
DigitsVOC train (384 images), tested once on the fresh split `confirm_thr`
(320 images, synthesis seed 3), seeds 30-34; each run tested at score_thr 0
and its detections re-scored at 0.05 and at 0. H1: RaMBO + sigmoid CE >
cross-entropy, both at 0.05; H2: the same, both at 0. One-sided, Holm over
the two."""
data = dict(
    root='data/digits_voc/VOCdevkit',
    make=['tools/dataset_converters/make_digits_voc.py', '{root}'],
    # the fresh split, beside the others (their files are not touched)
    make_test=['tools/dataset_converters/make_digits_voc.py', '{root}',
               '--fresh-test', 'confirm_thr', '--fresh-test-images', '320',
               '--fresh-test-seed', '3'])
test_split = 'confirm_thr'
seeds = [30, 31, 32, 33, 34]
preregistered = True  # no test run without the frozen file
fair_selection = False  # lrs selected before, one seed each (see above)
baseline = 'ce'
# every run tested at 0, the lowest threshold compared; the val loop only
# after the last epoch (it decides nothing here)
options = ['model.test_cfg.rcnn.score_thr=0.0']
test_phase_options = ['train_cfg.val_interval=16']
score_thresholds = [0.05, 0.0]
alpha = 0.05

_frcnn = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_{}_16e_digitsvoc.py'
methods = dict(
    ce=dict(
        label='cross-entropy (Faster R-CNN)', config=_frcnn.format('ce'),
        lr=0.04,
        selected_on=dict(study='digitsvoc_scratch_16e', seeds=[0],
                         note='val AP50 of the grid 0.01 / 0.02 / 0.04 / '
                         '0.08')),
    rambo_bce=dict(
        label='RaMBO + sigmoid CE (MixedRankLoss, Faster R-CNN)',
        config=_frcnn.format('rambo-bce'), lr=0.04,
        selected_on=dict(study='digitsvoc_scratch_16e', seeds=[0],
                         note='val AP50 of the grid 0.02 / 0.04 / 0.1')),
)
hypotheses = [
    dict(method='rambo_bce', baseline='ce', alternative='greater',
         metric='pascal_voc/AP50@0.05'),
    dict(method='rambo_bce', baseline='ce', alternative='greater',
         metric='pascal_voc/AP50@0'),
]
