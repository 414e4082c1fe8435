# RetinaNet with Rank & Sort at the longer DigitsVOC budget: its 16-epoch
# twin trained 56 epochs (`../_base_/schedule_56e_digitsvoc.py`), the run
# that lab/rankloss_lab/studies/confirm_dense_long.py tests on a fresh split
# (pre-registered; results: docs/evidence/confirm_dense_long.md).
# Batch: 8 images per process; lr 0.04 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './retinanet_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rank-sort.py',
    '../_base_/schedule_56e_digitsvoc.py'
]

model = dict(
    bbox_head=dict(_base_.rank_sort_dense_head, type='RankSortRetinaHead'),
    test_cfg=_base_.rank_sort_test_cfg)
train_cfg = dict(max_epochs=_base_.long_epochs)
param_scheduler = _base_.long_param_scheduler
# lr: selected on val by that study (mean of seeds 5 and 11)
optim_wrapper = dict(optimizer=dict(lr=0.04))
