# Rank & Sort Loss twin of `atss_r50_fpn_focal_1x_coco.py` (`RankSortATSSHead`,
# no centerness as in the RS paper) on MMDetection's ATSS recipe: its anchors
# (1 a location), lr, batch and schedule, and no score threshold. The RS
# authors' recipe (3 anchors a location, 4 images a GPU, lr 0.008, score_thr
# 0.05) is `atss_r50_fpn_rank-sort_1x_coco.py`. Not trained: no result on
# coco was measured.
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./atss_r50_fpn_focal_1x_coco.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(_base_.rank_sort_dense_head, type='RankSortATSSHead'),
    test_cfg=_base_.rank_sort_test_cfg)
