# Rank & Sort Loss ATSS R50 FPN on COCO (RS-ATSS), the authors' recipe:
# kemaloksuz/RankSortLoss,
# configs/ranksort_loss/ranksort_atss_r50_fpn_1x_coco.py (MMDetection 2.x):
# `RankSortATSSHead` on MMDetection's ATSS 1x with their anchors
# (docs/dense.md). On MMDetection's ATSS recipe:
# `atss_r50_fpn_rank-sort_mmdet-1x_coco.py`.
# Batch: 4 images per process; lr 0.008 is for a total batch of 16,
# the authors' 4 GPUs x 4 images: `tools/dist_train.sh CONFIG 4` trains it,
# each process ranking its own 4 images as theirs did (docs/multi_gpu.md).
_base_ = ['./atss_r50_fpn_focal_1x_coco.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(
        _base_.rank_sort_dense_head,
        type='RankSortATSSHead',
        anchor_generator=dict(octave_base_scale=4, scales_per_octave=3)))

train_dataloader = dict(batch_size=4)
optim_wrapper = dict(optimizer=dict(lr=0.008))
