# Rank & Sort Loss twin of `retinanet_r18-w32_fpn_focal_16e_digitsvoc.py`:
# `RankSortRetinaHead` (RS over all anchors of all levels and images, IoU
# labels, GIoU box loss weighted by L_RS / L_box; `../_base_/rank-sort.py`).
# lr: the focal twin's, not selected for RS. Trained here for one epoch only
# (a smoke run, docs/rank_sort.md); no study was run.
_base_ = [
    './retinanet_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rank-sort.py'
]

model = dict(
    bbox_head=dict(_base_.rank_sort_dense_head, type='RankSortRetinaHead'),
    test_cfg=_base_.rank_sort_test_cfg)
