# The classification losses of the DINO configs of this family, as
# variables (docs/architecture.md#configs): a config takes its focal twin and
# this file as bases, e.g. `bbox_head=_base_.rank_sort_head` with
# `train_cfg=dict(assigner=_base_.rank_sort_assigner)`.
_base_ = '../../dense/_base_/rambo-ap.py'  # the dense RaMBO mix

# How the Rank & Sort configs differ from BRS-DETR (Co-Deformable-DETR on
# MMDetection 2.25; every classification loss replaced by bucketed RS, L1 /
# GIoU self-balanced, focal matching cost 4):
# - the RS loss evaluated directly, not bucketed (the same loss; bucketing
#   is BRS-DETR's faster evaluation of it);
# - DINO, not Co-Deformable-DETR: no auxiliary heads (ATSS, RPN, RoI) and
#   no auxiliary positive queries; the encoder's proposals are ranked with
#   their class labels (MMDetection 3's DINO encoder loss);
# - a matched query whose box misses its ground truth (IoU 0) stays a
#   positive of label 0 (BRS-DETR: a negative), so that the ranking is
#   sized by the host's count of matches, with no read of the data;
# - the box losses are averaged over the process's own positives (not
#   all-reduced over the processes);
# - the rest (matching with focal cost 4, one ranking per loss call, the
#   self-balance of L1 and GIoU to the RS value) is BRS-DETR's;
#   `rank_layers_together=True` ranks all matched (all denoising) queries
#   of a step at once instead.
# From Rank-DETR (H-DETR, detrex) none of the configs takes anything: no
# query re-sorting after each decoder layer, no (GIoU + 1) / 2 focal-style
# target (the quality-focal configs are of its family, with IoU targets),
# no switch to the -p * IoU^4 matching cost late in training (the cost is
# `HighOrderMatchCost`, for `train_cfg.assigner.match_costs`). RaMBO is in
# neither paper.

# Rank & Sort (`RankSortDINOHead`): every classification loss of DINO is RS
# over the batch's (query, class) logits, the matched box's IoU the
# positive's label; L1 and GIoU are each rescaled to the RS value (their
# loss weights do not matter).
rank_sort_head = dict(
    type='RankSortDINOHead',
    loss_cls=dict(
        _delete_=True, type='RankSortLoss', zero_quality_as_negative=False))
# BRS-DETR's best matching: the focal cost's weight raised from 2 to 4
rank_sort_assigner = dict(match_costs=[
    dict(type='FocalLossCost', weight=4.0),
    dict(type='BBoxL1Cost', weight=5.0, box_format='xywh'),
    dict(type='IoUCost', iou_mode='giou', weight=2.0)
])

# RaMBO beside DINO's focal loss (`RaMBODINOHead`): the dense recipe's mix,
# RaMBO ranking each loss call's logits; box losses and matching as DINO's.
# The focal and box terms are normalised by the process's own positives
# (DINO all-reduces them: the same on one process).
rambo_focal_head = dict(
    type='RaMBODINOHead', loss_cls=_base_.rambo_focal_dense_loss)

# Quality Focal Loss through the stock `DINOHead`'s IoU-aware branch (the
# matched box's IoU as the target): the family of Rank-DETR's (GIoU + 1) / 2
# target and Stable-DINO's position-supervised loss, neither of which it is.
quality_focal_head = dict(
    loss_cls=dict(
        _delete_=True,
        type='QualityFocalLoss',
        use_sigmoid=True,
        beta=2.0,
        loss_weight=1.0))
