# aLRP Loss twin of `atss_r50_fpn_focal_1x_coco.py` (`ALRPATSSHead`) on
# MMDetection's ATSS recipe, with no score threshold; the authors' "ATSS" is
# `atss_r50_fpn_alrp_100e_coco-512.py`. Not trained: no result on coco was
# measured.
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./atss_r50_fpn_focal_1x_coco.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(_base_.alrp_dense_head, type='ALRPATSSHead'),
    test_cfg=_base_.rank_sort_test_cfg)
custom_hooks = _base_.alrp_hooks
