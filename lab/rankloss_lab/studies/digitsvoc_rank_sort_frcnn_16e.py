# Study: RS-R-CNN (Rank & Sort over all RoIs of the box head,
# `RankSortBBoxHead`) against cross-entropy and the mix (RaMBO + sigmoid CE)
# on DigitsVOC, Faster R-CNN R18-w32 FPN from scratch, 16 epochs: the
# two-stage half of the dense rank-loss comparison.
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_rank_sort_frcnn_16e.py --phase select --jobs 2
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_rank_sort_frcnn_16e.py --freeze
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_rank_sort_frcnn_16e.py --phase test --jobs 2
# CE's and the mix's lrs were selected on val in `digitsvoc_scratch_16e`
# (seed 0); RS gets its own grid here, selected with seed 5; the test seeds
# 6-10 took part in no selection.
_base_ = './digitsvoc_scratch_16e.py'  # data
description = """Faster R-CNN R18-w32 FPN **from scratch**, 16 epochs (lr / 10
after 12), batch 8, DigitsVOC train (384 images) / val (160) / test (320):
cross-entropy, RaMBO + sigmoid CE, Rank & Sort (RS-R-CNN)."""
baseline = 'ce'
select_seed = 5
seeds = [6, 7, 8, 9, 10]
preregistered = True  # no test run without the frozen file

_frcnn = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_{}_16e_digitsvoc.py'
methods = dict(
    _delete_=True,  # not the two-stage study's ablations
    ce=dict(label='cross-entropy', config=_frcnn.format('ce'), lr=0.04,
            selected_on=dict(study='digitsvoc_scratch_16e', seeds=[0],
                             note='val AP50 of the grid 0.01 / 0.02 / 0.04 / '
                             '0.08')),
    rambo_bce=dict(label='RaMBO + sigmoid CE (MixedRankLoss)',
                   config=_frcnn.format('rambo-bce'), lr=0.04,
                   selected_on=dict(study='digitsvoc_scratch_16e', seeds=[0],
                                    note='val AP50 of the grid 0.02 / 0.04 / '
                                    '0.1')),
    rank_sort=dict(label='Rank & Sort (RS-R-CNN, delta 0.5)',
                   config=_frcnn.format('rank-sort'),
                   lrs=[0.01, 0.02, 0.04, 0.08]),
)
hypotheses = [
    dict(method='rank_sort', baseline='ce', alternative='two-sided'),
    dict(method='rambo_bce', baseline='ce', alternative='greater'),
]
