# RS-PAA R50 FPN on COCO, the authors' recipe: kemaloksuz/RankSortLoss,
# configs/ranksort_loss/ranksort_paa_r50_fpn_1x_coco.py (MMDetection 2.x):
# MMDetection's `paa_r50_fpn_1x_coco.py` with `RankSortPAAHead` (no IoU
# branch; PAA's assignment scored by focal loss + GIoU) and their anchors,
# 3 a location (docs/dense.md).
# Batch: 4 images per process; lr 0.008 is for a total batch of 16,
# the authors' 4 GPUs x 4 images: `tools/dist_train.sh CONFIG 4` trains it,
# each process ranking its own 4 images as theirs did (docs/multi_gpu.md).
_base_ = ['mmdet::paa/paa_r50_fpn_1x_coco.py', '../dense/_base_/rank-sort.py']

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)

model = dict(
    bbox_head=dict(
        _base_.rank_sort_dense_head,
        type='RankSortPAAHead',
        anchor_generator=dict(octave_base_scale=4, scales_per_octave=3)))

train_dataloader = dict(batch_size=4)
optim_wrapper = dict(optimizer=dict(lr=0.008))
auto_scale_lr = dict(enable=True, base_batch_size=16)
