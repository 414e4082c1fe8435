# Rank & Sort Loss twin of `faster-rcnn_r50_fpn_ce_1x_voc0712.py` (RS-R-CNN,
# `../dense/_base_/rank-sort.py`: `RankSortBBoxHead`, no RoI sampling and the
# authors' RS RPN; stock RPN: delete the `rpn_head=` and `rpn=` entries
# below). lr and schedule: the CE twin's, not the paper's. Not trained: no
# VOC result was measured (on DigitsVOC RS-R-CNN did not beat CE,
# docs/evidence/digitsvoc_rank_sort_frcnn_16e.md).
# Batch: 8 images per process; lr 0.005 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './faster-rcnn_r50_fpn_ce_1x_voc0712.py', '../dense/_base_/rank-sort.py'
]

model = dict(
    rpn_head=_base_.rank_sort_rpn_head,
    roi_head=dict(bbox_head=_base_.rank_sort_rcnn_head),
    train_cfg=dict(
        rpn=dict(sampler=_base_.rank_sort_rpn_sampler),
        rcnn=dict(sampler=_base_.rank_sort_rcnn_sampler)),
    test_cfg=dict(rcnn=_base_.rank_sort_test_cfg))
