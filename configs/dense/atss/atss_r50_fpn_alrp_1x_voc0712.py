# aLRP Loss twin of `atss_r50_fpn_focal_1x_voc0712.py` (`ALRPATSSHead`, no
# centerness). lr and schedule: the focal twin's (MMDetection's 1x), not the
# paper's longer schedule. Not trained: no result on voc0712 was measured.
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./atss_r50_fpn_focal_1x_voc0712.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(_base_.alrp_dense_head, type='ALRPATSSHead'),
    test_cfg=_base_.rank_sort_test_cfg)
custom_hooks = _base_.alrp_hooks
