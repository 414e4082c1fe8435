# DINO-4scale R50 on COCO trained by Rank & Sort Loss (`RankSortDINOHead`),
# BRS-DETR's recipe on MMDetection's DINO (`./_base_/rank-losses.py` lists
# how it differs from BRS-DETR and Rank-DETR). Not trained here (no GPU).
# Batch: 2 images per process; lr 0.0001 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./dino-4scale_r50_focal_12e_coco.py', './_base_/rank-losses.py']

model = dict(
    bbox_head=_base_.rank_sort_head,
    train_cfg=dict(assigner=_base_.rank_sort_assigner))
