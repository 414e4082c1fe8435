# DINO on DigitsVOC trained by Rank & Sort Loss (`RankSortDINOHead`),
# BRS-DETR's recipe (`./_base_/rank-losses.py` lists how it differs from
# BRS-DETR and Rank-DETR): the focal twin with this loss and its own lr
# only: 0.0008, selected on val at 12 epochs (mean over seeds 5 and 11,
# lab/rankloss_lab/studies/digitsvoc_dino_long.py).
# Batch: 8 images per process; lr 0.0008 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './dino-4scale_r18-w32-glyphs_focal_12e_digitsvoc.py',
    './_base_/rank-losses.py'
]

model = dict(
    bbox_head=_base_.rank_sort_head,
    train_cfg=dict(assigner=_base_.rank_sort_assigner))
optim_wrapper = dict(optimizer=dict(lr=0.0008))
