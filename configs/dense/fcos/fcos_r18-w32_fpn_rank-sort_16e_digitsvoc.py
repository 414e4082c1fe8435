# Rank & Sort Loss twin of `fcos_r18-w32_fpn_focal_16e_digitsvoc.py`:
# `RankSortFCOSHead`, the RS paper's ATSS recipe on FCOS's points (no
# centerness loss or test-score factor; docs/dense.md).
# Batch: 8 images per process; lr 0.01 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./fcos_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(type='RankSortFCOSHead', loss_cls=_base_.rank_sort_loss),
    test_cfg=_base_.rank_sort_test_cfg)
# lr: selected on val by the focal twin's study
optim_wrapper = dict(optimizer=dict(lr=0.01))
