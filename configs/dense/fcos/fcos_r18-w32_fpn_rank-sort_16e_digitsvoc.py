# Rank & Sort Loss twin of `fcos_r18-w32_fpn_focal_16e_digitsvoc.py`:
# `RankSortFCOSHead` (RS over all points with the IoUs of the positives'
# predicted boxes as labels, the twin's GIoU box loss weighted by each
# positive's score instead of its centerness target and rescaled to L_RS, no
# centerness loss and no centerness in the test scores, as the RS paper does
# for ATSS; `../_base_/rank-sort.py`, docs/dense.md).
# Batch: 8 images per process; lr 0.01 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./fcos_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(type='RankSortFCOSHead', loss_cls=_base_.rank_sort_loss),
    test_cfg=_base_.rank_sort_test_cfg)
# lr: selected on val (mean of seeds 5 and 11) by
# lab/rankloss_lab/studies/digitsvoc_dense_fcos_16e.py from
# {0.0025, 0.005, 0.01, 0.02};
# results: docs/evidence/digitsvoc_dense_fcos_16e.md.
optim_wrapper = dict(optimizer=dict(lr=0.01))
