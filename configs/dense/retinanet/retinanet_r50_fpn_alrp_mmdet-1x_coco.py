# aLRP Loss twin of `retinanet_r50_fpn_focal_1x_coco.py` (`ALRPRetinaHead`,
# `../_base_/rank-sort.py`: delta 1.0, GIoU localisation errors, box coder stds
# [0.1, 0.1, 0.2, 0.2], the self-balance weight starting at 50 and set every
# `ALRPSelfBalanceHook` default period after the warm-up: 3,665 iterations,
# half an epoch at this batch) on MMDetection's RetinaNet recipe: its
# anchors (9 a location), 1333 x 800 data, 12 epochs, lr and batch, and no
# score threshold. The aLRP authors' recipe (100 epochs at 512 px with SSD
# augmentation, 6 anchors a location, batch 32, SB period one epoch) is
# `retinanet_r50_fpn_alrp_100e_coco-512.py`. Not trained: no result on coco
# was measured.
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./retinanet_r50_fpn_focal_1x_coco.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(_base_.alrp_dense_head, type='ALRPRetinaHead'),
    test_cfg=_base_.rank_sort_test_cfg)
custom_hooks = _base_.alrp_hooks
