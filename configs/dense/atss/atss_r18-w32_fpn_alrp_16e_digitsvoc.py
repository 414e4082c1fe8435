# aLRP Loss twin of `atss_r18-w32_fpn_focal_16e_digitsvoc.py`: `ALRPATSSHead`
# (aLRP over all anchors, GIoU localisation errors, self-balance hook, no
# centerness; `../_base_/rank-sort.py`). lr: the focal twin's, not selected
# for aLRP. Not trained (docs/rank_sort.md).
_base_ = ['./atss_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(_base_.alrp_dense_head, type='ALRPATSSHead'),
    test_cfg=_base_.rank_sort_test_cfg)
custom_hooks = _base_.alrp_hooks
