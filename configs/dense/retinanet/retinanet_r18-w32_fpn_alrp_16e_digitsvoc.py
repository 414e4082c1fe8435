# aLRP Loss twin of `retinanet_r18-w32_fpn_focal_16e_digitsvoc.py`:
# `ALRPRetinaHead` (aLRP over all anchors, GIoU localisation errors, the
# self-balance hook; `../_base_/rank-sort.py`). lr: the focal twin's, not
# selected for aLRP. Not trained (docs/rank_sort.md).
_base_ = [
    './retinanet_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rank-sort.py'
]

model = dict(
    bbox_head=dict(_base_.alrp_dense_head, type='ALRPRetinaHead'),
    test_cfg=_base_.rank_sort_test_cfg)
custom_hooks = _base_.alrp_hooks
