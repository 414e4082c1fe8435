# Study: the paper's regime, emulated. Faster R-CNN R18-w32 FPN on DigitsVOC
# from a backbone pretrained as a classifier of printed glyphs (the part
# ImageNet plays for the paper; `rankloss_lab.datasets.glyphs`), 12 epochs,
# lr / 10 after 9: cross-entropy, RaMBO at the paper's settings, RaMBO with
# margin 0 and the mix (RaMBO + sigmoid CE).
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_pretrained_12e.py --phase select --jobs 2
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_pretrained_12e.py --freeze
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_pretrained_12e.py --phase test --jobs 2
# Each loss's lr is selected on val with seed 5; the test seeds 0-4 take
# part in no selection. The hypotheses are frozen after the selection and
# before any test run. How this differs from the paper's Table 5:
# docs/evidence.md, "Pretrained backbone".
description = """Faster R-CNN R18-w32 FPN, backbone **pretrained** as a
62-class classifier of printed glyphs (stage 1 and BatchNorm frozen), 12
epochs (lr / 10 after 9), batch 8, DigitsVOC train (384 images) / val (160)
/ test (320)."""
data = dict(
    root='data/digits_voc/VOCdevkit',
    make=['tools/dataset_converters/make_digits_voc.py', '{root}'])
prepare = [
    dict(path='checkpoints/r18-w32_glyphs.pth',
         make=['tools/misc/pretrain_backbone.py',
               'checkpoints/r18-w32_glyphs.pth', '--threads', '1'])
]
seeds = [0, 1, 2, 3, 4]
select_seed = 5
baseline = 'ce'
options = []
preregistered = True  # no test run without the frozen file

_cfg = 'configs/digitsvoc/faster-rcnn_r18-w32-glyphs_fpn_{}_12e_digitsvoc.py'
_loss = 'model.roi_head.bbox_head.loss_cls.'
# Grids: MMDetection's fine-tuning lr for batch 8 (0.01) and two doublings
# for the cross-entropies; RaMBO's centred on the paper's 10x ratio to CE.
# A grid is widened by one step when its best comes out at its edge: CE
# 0.08 was added (val AP50 43.0 / 50.0 / 53.1 at 0.01 / 0.02 / 0.04), margin
# 0's 0.2 (52.7 / 55.1 / 56.2 at 0.02 / 0.05 / 0.1); then CE's 0.16 (0.08:
# 56.2). The mix's 0.08 and RaMBO's 0.2 were added at the same time, before
# their 0.04 / 0.1 results were in (their lower rates were rising: mix
# 50.8 / 55.5, RaMBO 48.3 / 52.9), so that the selection ended in time;
# then the mix's 0.16 (0.04: 61.8, 0.08: 63.3).
methods = dict(
    ce=dict(label='cross-entropy', config=_cfg.format('ce'),
            lrs=[0.01, 0.02, 0.04, 0.08, 0.16]),
    rambo=dict(label='RaMBO (paper settings)', config=_cfg.format('rambo'),
               lrs=[0.02, 0.05, 0.1, 0.2]),
    margin0=dict(label='RaMBO, margin 0', config=_cfg.format('rambo'),
                 lrs=[0.02, 0.05, 0.1, 0.2], options=[_loss + 'margin=0.0']),
    rambo_bce=dict(label='RaMBO + sigmoid CE (MixedRankLoss)',
                   config=_cfg.format('rambo-bce'),
                   lrs=[0.01, 0.02, 0.04, 0.08, 0.16]),
)
# Written while the selection ran (2 of its 12 val results known: CE and
# margin 0 at their smallest lr), before any test run. The mix beat CE from
# scratch (confirmed on a fresh split): one-sided here. The paper reports
# RaMBO above CE from ImageNet features (Table 5), while from scratch it lost
# at the paper's margin and tied at margin 0: two-sided. Holm over the three.
hypotheses = [
    dict(method='rambo_bce', baseline='ce', alternative='greater'),
    dict(method='rambo', baseline='ce', alternative='two-sided'),
    dict(method='margin0', baseline='ce', alternative='two-sided'),
]
# Exploratory, added after the test runs had started: CE at its selected
# 0.08 diverged in the warm-up with 2 of its 5 test seeds (test AP50 0.0),
# so CE at the next rate of its grid (0.04, val AP50 53.1) is tested on the
# same seeds. Not a hypothesis; its rows are labelled exploratory.
methods['ce_lr004'] = dict(
    label='cross-entropy, lr 0.04', config=_cfg.format('ce'),
    lr=0.04,
    selected_on=dict(study='digitsvoc_pretrained_12e', seeds=[5],
                     note="the second-best val AP50 of CE's grid, 53.1; "
                     'added after 2 of 5 CE test runs at 0.08 diverged'))
