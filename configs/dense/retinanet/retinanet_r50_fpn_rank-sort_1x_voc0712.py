# Rank & Sort Loss twin of `retinanet_r50_fpn_focal_1x_voc0712.py`
# (`RankSortRetinaHead`, no focal loss). lr and schedule: the focal twin's
# (MMDetection's), not the paper's. Not trained: no result on voc0712 was
# measured.
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./retinanet_r50_fpn_focal_1x_voc0712.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(_base_.rank_sort_dense_head, type='RankSortRetinaHead'),
    test_cfg=_base_.rank_sort_test_cfg)
