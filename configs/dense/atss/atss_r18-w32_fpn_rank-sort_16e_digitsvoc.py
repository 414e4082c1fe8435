# Rank & Sort Loss twin of `atss_r18-w32_fpn_focal_16e_digitsvoc.py`:
# `RankSortATSSHead` (RS over all anchors with IoU labels, value-weighted
# GIoU box loss, no centerness as in the RS paper; `../_base_/rank-sort.py`).
# lr: the focal twin's, not selected for RS. Trained here for one epoch only
# (a smoke run, docs/rank_sort.md); no study was run.
_base_ = ['./atss_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(_base_.rank_sort_dense_head, type='RankSortATSSHead'),
    test_cfg=_base_.rank_sort_test_cfg)
