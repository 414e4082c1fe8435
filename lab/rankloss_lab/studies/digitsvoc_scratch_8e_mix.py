# Study: the mix (RaMBO + sigmoid CE) against cross-entropy at the
# quickstart's budget, 8 epochs (lr / 10 after 6): does the 16-epoch gain
# hold at half the budget? Both methods are selected in this study, on val,
# with the same factor-2 grid and the same selection seed (5); the test seeds
# 6-10 took part in no selection. One hypothesis, declared before any test
# run: the mix is better than cross-entropy (one-sided, as the mix's other
# pre-registered tests).
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_scratch_8e_mix.py --phase select --jobs 2
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_scratch_8e_mix.py --freeze
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_scratch_8e_mix.py --phase test --jobs 2
_base_ = './digitsvoc_scratch_8e.py'
description = """Faster R-CNN R18-w32 FPN **from scratch**, 8 epochs (lr / 10
after 6; the quickstart's budget), batch 8, DigitsVOC train (384 images) / val
(160) / test (320): cross-entropy and RaMBO + sigmoid CE."""
select_seed = 5
seeds = [6, 7, 8, 9, 10]
preregistered = True  # no test run without the frozen file
fair_selection = True  # every method selected here, one grid density
_frcnn = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_{}_16e_digitsvoc.py'
# one grid for both: the 16-epoch and 8-epoch studies chose 0.04 for each
_grid = [0.01, 0.02, 0.04, 0.08]
methods = dict(
    _delete_=True,
    ce=dict(label='cross-entropy', config=_frcnn.format('ce'), lrs=_grid),
    rambo_bce=dict(label='RaMBO + sigmoid CE (MixedRankLoss)',
                   config=_frcnn.format('rambo-bce'), lrs=_grid),
)
hypotheses = [
    dict(method='rambo_bce', baseline='ce', alternative='greater'),
]
