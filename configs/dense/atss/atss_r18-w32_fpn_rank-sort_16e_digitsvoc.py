# Rank & Sort Loss twin of `atss_r18-w32_fpn_focal_16e_digitsvoc.py`:
# `RankSortATSSHead` (RS over all anchors with IoU labels, score-weighted
# GIoU box loss rescaled to L_RS, no centerness as in the RS paper;
# `../_base_/rank-sort.py`). The lr and the results below were measured
# with uniform box weights (before the authors' score weighting); not
# re-measured since.
# Batch: 8 images per process; lr 0.005 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./atss_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(_base_.rank_sort_dense_head, type='RankSortATSSHead'),
    test_cfg=_base_.rank_sort_test_cfg)
# lr: selected on val by experiments/studies/digitsvoc_dense_atss_rank_sort_16e.py
# (seed 5) from {0.0025, 0.005, 0.01, 0.02} (val AP50 22.9 / 23.8 / 23.0 /
# 18.6); test AP50 22.7 +- 1.8 against focal's 23.4 +- 1.4, -0.7 [-2.9, +1.5]
# paired over seeds 6-10: no difference detected
# (docs/evidence/digitsvoc_dense_atss_rank_sort_16e.md).
optim_wrapper = dict(optimizer=dict(lr=0.005))
