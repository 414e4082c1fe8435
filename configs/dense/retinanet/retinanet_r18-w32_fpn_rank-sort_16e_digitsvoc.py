# Rank & Sort Loss twin of `retinanet_r18-w32_fpn_focal_16e_digitsvoc.py`:
# `RankSortRetinaHead` (`../_base_/rank-sort.py`, docs/dense.md).
# Batch: 8 images per process; lr 0.04 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './retinanet_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rank-sort.py'
]

model = dict(
    bbox_head=dict(_base_.rank_sort_dense_head, type='RankSortRetinaHead'),
    test_cfg=_base_.rank_sort_test_cfg)
# lr: 0.04, the more conservative neighbour of the 0.08 that one seed (5)
# selected on val in lab/rankloss_lab/studies/digitsvoc_dense_fixed_16e.py
# from {0.005, 0.01, 0.02, 0.04, 0.08, 0.16} (authors' box coder stds and box
# weighting), where 0.16 collapsed: the stability rule of
# rankloss_lab.study.selection. Changed after that study's test, which ran
# 0.08 (docs/evidence/digitsvoc_dense_fixed_16e.md): 0.04 is not evidence;
# it trained at 56 epochs with every seed
# (docs/evidence/confirm_dense_long.md).
optim_wrapper = dict(optimizer=dict(lr=0.04))
