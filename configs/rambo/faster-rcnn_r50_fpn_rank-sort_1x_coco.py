# RS-R-CNN R50 FPN on COCO, the authors' recipe: kemaloksuz/RankSortLoss,
# configs/ranksort_loss/ranksort_faster_rcnn_r50_fpn_1x_coco.py (MMDetection
# 2.x): MMDetection's `faster-rcnn_r50_fpn_1x_coco.py` with the RS heads of
# `../dense/_base_/rank-sort.py` at their RoI score threshold of 0.40 (stock
# RPN: delete the `rpn_head=` and `rpn=` entries below). On MMDetection's
# recipe: `faster-rcnn_r50_fpn_rank-sort_mmdet-1x_coco.py`.
# Batch: 4 images per process; lr 0.012 is for a total batch of 16,
# the authors' 4 GPUs x 4 images: `tools/dist_train.sh CONFIG 4` trains it,
# each process ranking its own 4 images as theirs did (docs/multi_gpu.md).
_base_ = [
    'mmdet::faster_rcnn/faster-rcnn_r50_fpn_1x_coco.py',
    '../dense/_base_/rank-sort.py'
]

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)

model = dict(
    rpn_head=_base_.rank_sort_rpn_head,
    roi_head=dict(bbox_head=_base_.rank_sort_rcnn_head),
    train_cfg=dict(
        rpn=dict(sampler=_base_.rank_sort_rpn_sampler),
        rcnn=dict(sampler=_base_.rank_sort_rcnn_sampler)),
    test_cfg=dict(rcnn=dict(score_thr=0.4)))

train_dataloader = dict(batch_size=4)
optim_wrapper = dict(optimizer=dict(lr=0.012))
auto_scale_lr = dict(enable=True, base_batch_size=16)
