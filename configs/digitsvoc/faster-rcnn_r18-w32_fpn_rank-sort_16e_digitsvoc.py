# Rank & Sort Loss twin of `faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py`
# (RS-R-CNN): `RankSortBBoxHead` ranks every (RoI, class) logit with the IoU
# of each positive RoI's regressed box as its label, the GIoU box loss is
# weighted by L_RS / L_box, and no RoIs are sampled (all proposals plus the
# ground truths), from `../dense/_base_/rank-sort.py`. The RPN keeps its
# stock losses. lr: the CE twin's, not selected for RS. Not trained
# (docs/rank_sort.md).
_base_ = [
    './faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py',
    '../dense/_base_/rank-sort.py'
]

model = dict(
    roi_head=dict(bbox_head=_base_.rank_sort_rcnn_head),
    train_cfg=dict(rcnn=dict(sampler=_base_.rank_sort_rcnn_sampler)),
    test_cfg=dict(rcnn=_base_.rank_sort_test_cfg))
