# RS-PAA on DigitsVOC: the ATSS of
# `../dense/atss/atss_r18-w32_fpn_focal_16e_digitsvoc.py` made the PAA of
# `paa_r50_fpn_rank-sort_1x_coco.py` (`RankSortPAAHead`, MMDetection's PAA
# assigner and score voting), with no score threshold. The lr is RS-ATSS's
# on DigitsVOC, not selected for PAA.
# Batch: 8 images per process; lr 0.01 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    '../dense/atss/atss_r18-w32_fpn_focal_16e_digitsvoc.py',
    '../dense/_base_/rank-sort.py'
]

model = dict(
    type='PAA',
    bbox_head=dict(
        _base_.rank_sort_dense_head,
        type='RankSortPAAHead',
        topk=9,
        score_voting=True),
    train_cfg=dict(
        assigner=dict(
            _delete_=True,
            type='MaxIoUAssigner',
            pos_iou_thr=0.1,
            neg_iou_thr=0.1,
            min_pos_iou=0,
            ignore_iof_thr=-1)),
    test_cfg=_base_.rank_sort_test_cfg)

optim_wrapper = dict(optimizer=dict(lr=0.01))
