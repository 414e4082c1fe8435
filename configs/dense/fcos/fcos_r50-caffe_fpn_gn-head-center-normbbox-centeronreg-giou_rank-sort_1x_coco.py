# Rank & Sort Loss twin of the `_focal_1x_coco.py` FCOS beside it
# (`RankSortFCOSHead`: no centerness, as the RS paper does for ATSS). lr and
# schedule: the focal twin's, not the paper's. Not trained: no result on coco
# was measured.
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './fcos_r50-caffe_fpn_gn-head-center-normbbox-centeronreg-giou_focal_1x_coco.py',
    '../_base_/rank-sort.py'
]

model = dict(
    bbox_head=dict(type='RankSortFCOSHead', loss_cls=_base_.rank_sort_loss),
    test_cfg=_base_.rank_sort_test_cfg)
