# aLRP Loss twin of `retinanet_r50_fpn_focal_1x_coco.py` (`ALRPRetinaHead`)
# on MMDetection's RetinaNet recipe, with no score threshold; the authors'
# recipe is `retinanet_r50_fpn_alrp_100e_coco-512.py`. Not trained: no result
# on coco was measured.
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./retinanet_r50_fpn_focal_1x_coco.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(_base_.alrp_dense_head, type='ALRPRetinaHead'),
    test_cfg=_base_.rank_sort_test_cfg)
custom_hooks = _base_.alrp_hooks
