# Rank & Sort Loss twin of `retinanet_r50_fpn_focal_1x_coco.py`
# (`RankSortRetinaHead`) on MMDetection's RetinaNet recipe, with no score
# threshold. The RS authors shipped no RetinaNet config; their one-stage
# recipe is `../atss/atss_r50_fpn_rank-sort_1x_coco.py`. Not trained: no
# result on coco was measured.
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./retinanet_r50_fpn_focal_1x_coco.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(_base_.rank_sort_dense_head, type='RankSortRetinaHead'),
    test_cfg=_base_.rank_sort_test_cfg)
