# aLRP Loss twin of `atss_r50_fpn_focal_1x_coco.py` (`ALRPATSSHead`,
# `../_base_/rank-sort.py`: delta 1.0, GIoU localisation errors, the
# self-balance weight starting at 50 and set every `ALRPSelfBalanceHook`
# default period after the warm-up: 3,665 iterations, half an epoch at this
# batch; no centerness) on MMDetection's ATSS recipe: its head (GroupNorm, a
# scale per level, 1 anchor a location), 1333 x 800 data, 12 epochs, lr and
# batch, and no score threshold. The aLRP authors' "ATSS" (RetinaNet's head
# with ATSS assignment, 2 anchors a location, 100 epochs at 512 px, batch
# 32) is `atss_r50_fpn_alrp_100e_coco-512.py`. Not trained: no result on coco
# was measured.
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./atss_r50_fpn_focal_1x_coco.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(_base_.alrp_dense_head, type='ALRPATSSHead'),
    test_cfg=_base_.rank_sort_test_cfg)
custom_hooks = _base_.alrp_hooks
