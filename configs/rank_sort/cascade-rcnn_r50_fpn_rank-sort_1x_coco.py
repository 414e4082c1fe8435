# RS-Cascade R-CNN R50 FPN on COCO, the authors' recipe:
# kemaloksuz/RankSortLoss,
# configs/ranksort_loss/ranksort_cascade_rcnn_r50_fpn_1x_coco.py (MMDetection
# 2.x): MMDetection's `cascade-rcnn_r50_fpn_1x_coco.py` with the RS RPN and
# RS-R-CNN's head in every stage, whose `CascadeRoIHead` runs them as the
# authors' head does (docs/dense.md). Stock RPN instead: delete the
# `rpn_head=` entry and the `rpn=` entry of `train_cfg` below.
# Batch: 4 images per process; lr 0.012 is for a total batch of 16,
# the authors' 4 GPUs x 4 images: `tools/dist_train.sh CONFIG 4` trains it,
# each process ranking its own 4 images as theirs did (docs/multi_gpu.md).
_base_ = [
    'mmdet::cascade_rcnn/cascade-rcnn_r50_fpn_1x_coco.py',
    '../dense/_base_/rank-sort.py'
]

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)

# A list is replaced, not merged: each stage is written out whole, the RS
# values of `rank_sort_rcnn_head` without its `_delete_` markers.
model = dict(
    rpn_head=_base_.rank_sort_rpn_head,
    roi_head=dict(
        stage_loss_weights=[1, 1, 1],
        bbox_head=[
            dict(
                head,
                type='RankSortBBoxHead',
                reg_decoded_bbox=True,
                bbox_coder=_base_.rank_sort_bbox_coder,
                loss_cls=dict(type='RankSortLoss', delta=0.5),
                loss_bbox=dict(type='GIoULoss', loss_weight=1.0))
            for head in _base_.model.roi_head.bbox_head
        ]),
    train_cfg=dict(
        rpn=dict(sampler=_base_.rank_sort_rpn_sampler),
        rpn_proposal=dict(max_per_img=1000),
        rcnn=[
            dict(stage, sampler=dict(stage.sampler, num=10**10))
            for stage in _base_.model.train_cfg.rcnn
        ]),
    test_cfg=dict(rcnn=dict(score_thr=0.4)))

train_dataloader = dict(batch_size=4)
optim_wrapper = dict(optimizer=dict(lr=0.012))
auto_scale_lr = dict(enable=True, base_batch_size=16)
