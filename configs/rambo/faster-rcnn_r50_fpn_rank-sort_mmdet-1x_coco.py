# Rank & Sort Loss Faster R-CNN R50 FPN on COCO (RS-R-CNN): MMDetection's
# `faster-rcnn_r50_fpn_1x_coco.py` with `RankSortBBoxHead` (RS over every
# (RoI, class) logit with IoU labels, GIoU box loss weighted by L_RS / L_box)
# and no RoI sampling (all proposals plus the ground truths), and the RS
# RPN of the authors' code (`RankSortRPNHead`: RS over all anchors weighted
# by 0.2, GIoU box loss rescaled to it), from `../dense/_base_/rank-sort.py`
# (stock RPN: delete the `rpn_head=` and `rpn=` entries below). lr and
# schedule are MMDetection's, not the paper's. Not trained: no COCO result
# was measured.
# Batch: 2 images per process; lr 0.02 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
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
    test_cfg=dict(rcnn=_base_.rank_sort_test_cfg))

# MMDetection's lr is for a total batch of 16 (8 GPUs x 2 images): on other
# device counts MMEngine scales it linearly (one device: x1/8).
auto_scale_lr = dict(enable=True, base_batch_size=16)
