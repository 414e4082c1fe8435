# Rank & Sort Loss twin of `retinanet_r18-w32_fpn_focal_16e_digitsvoc.py`
# (`RankSortRetinaHead`, docs/dense.md).
# Batch: 8 images per process; lr 0.04 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './retinanet_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rank-sort.py'
]

model = dict(
    bbox_head=dict(_base_.rank_sort_dense_head, type='RankSortRetinaHead'),
    test_cfg=_base_.rank_sort_test_cfg)
# lr: 0.04, the stability rule's more conservative neighbour of the 0.08
# that seed 5 selected on val (authors' box coder stds and weighting) in
# lab/rankloss_lab/studies/digitsvoc_dense_fixed_16e.py, where 0.16
# collapsed. Changed after that study's test, which ran 0.08
# (docs/evidence/digitsvoc_dense_fixed_16e.md): 0.04 is not evidence; it
# trained at 56 epochs with every seed (docs/evidence/confirm_dense_long.md).
optim_wrapper = dict(optimizer=dict(lr=0.04))
