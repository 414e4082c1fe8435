# Confirmation study: the two gains of the exploratory studies, tested once
# more with settings frozen before any run, new seeds and a fresh test split.
#   python tools/study.py lab/rankloss_lab/studies/confirm_digitsvoc.py --freeze  # done
#   python tools/study.py lab/rankloss_lab/studies/confirm_digitsvoc.py --phase test --jobs 2
# The learning rates are the ones the exploratory studies selected on val;
# this study selects nothing. Its test seeds (10-14) took part in no
# selection (those used seeds 0-4), and its test split `confirm` holds new
# images (synthesis seed 1) of digit images that neither train, val nor test
# draws (tools/dataset_converters/make_digits_voc.py --fresh-test; frozen
# under its former path tools/make_digits_voc.py, the same script). The
# frozen hypotheses:
# docs/evidence/confirm_digitsvoc_preregistration.md; the protocol:
# docs/evidence.md, "Confirmation".
description = """Confirmation of two pre-registered hypotheses, from scratch, 16
epochs (lr / 10 after 12), batch 8: trained on DigitsVOC train (384 images),
tested once on the fresh split `confirm` (320 images, new synthesis seed,
digit images no other split draws), seeds 10-14. H1: Faster R-CNN R18-w32,
RaMBO + sigmoid CE > cross-entropy. H2: ATSS R18-w32, RaMBO (logits) + focal
> focal. One-sided, Holm over the two."""
data = dict(
    root='data/digits_voc/VOCdevkit',
    make=['tools/dataset_converters/make_digits_voc.py', '{root}'],
    # the fresh split, beside the others (their files are not touched)
    make_test=['tools/dataset_converters/make_digits_voc.py', '{root}',
               '--fresh-test', 'confirm', '--fresh-test-images', '320',
               '--fresh-test-seed', '1'])
test_split = 'confirm'
seeds = [10, 11, 12, 13, 14]
preregistered = True  # no test run without the frozen file
baseline = 'ce'
options = []
alpha = 0.05

_frcnn = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_{}_16e_digitsvoc.py'
_atss = 'configs/dense/atss/atss_r18-w32_fpn_{}_16e_digitsvoc.py'
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
    focal=dict(
        label='focal (ATSS)', config=_atss.format('focal'), lr=0.01,
        selected_on=dict(study='digitsvoc_dense_atss_16e', seeds=[0],
                         note='val AP50 of the grid 0.005 ... 0.08')),
    rambo_focal=dict(
        label='RaMBO (logits) + focal (MixedRankLoss, ATSS)',
        config=_atss.format('rambo-focal'), lr=0.01,
        selected_on=dict(
            study='digitsvoc_dense_atss_16e_mix_logits_lr', seeds=[0, 1, 2,
                                                                   3, 4],
            note='lr grid 0.005 / 0.01 / 0.02 with seed 0; the logits score '
            'space chosen over the sigmoid one by mean val AP50 over seeds '
            '0-4 (digitsvoc_dense_atss_16e)')),
)
hypotheses = [
    dict(method='rambo_bce', baseline='ce', alternative='greater'),
    dict(method='rambo_focal', baseline='focal', alternative='greater'),
]
