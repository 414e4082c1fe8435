# The losses and head settings of every Rank & Sort (RS) and aLRP config,
# written from the papers (Oksuz et al., ICCV 2021 and NeurIPS 2020;
# docs/rank_sort.md). A config pairs them with its focal / cross-entropy
# twin and swaps the stock head for the RS / aLRP one:
#   _base_ = ['./<focal twin>.py', '../_base_/rank-sort.py']
#   model = dict(bbox_head=dict(_base_.rank_sort_dense_head,
#                               type='RankSortRetinaHead'))
# Variables, not a `model`, because MMEngine does not merge one key from two
# bases.
#
# RS: delta 0.5 in logit units, no focal loss, no sampling heuristics; the
# positives' labels are the IoUs of their predicted boxes (the heads compute
# them); the box loss is GIoU on decoded boxes, weighted by L_RS / L_box at
# every iteration (the paper's loss-value-based weighting, so its
# `loss_weight` does not matter). ATSS heads drop the centerness branch, as
# the RS paper does.
rank_sort_loss = dict(_delete_=True, type='RankSortLoss', delta=0.5)
rank_sort_dense_head = dict(
    reg_decoded_bbox=True,
    loss_cls=rank_sort_loss,
    loss_bbox=dict(_delete_=True, type='GIoULoss', loss_weight=1.0))
# RS-R-CNN: the same loss in the bbox head, and no RoI sampling: every
# proposal (plus the ground truths, MMDetection's add_gt_as_proposals) is
# used, which a RandomSampler with an unreachable `num` and pos_fraction 1
# does.
rank_sort_rcnn_head = dict(
    type='RankSortBBoxHead',
    reg_decoded_bbox=True,
    loss_cls=rank_sort_loss,
    loss_bbox=dict(_delete_=True, type='GIoULoss', loss_weight=1.0))
rank_sort_rcnn_sampler = dict(
    _delete_=True,
    type='RandomSampler',
    num=100000,
    pos_fraction=1.0,
    neg_pos_ub=-1,
    add_gt_as_proposals=True)
# aLRP: delta 1.0; localisation errors (1 - GIoU) / 2 of the positives'
# decoded boxes (computed by the head; `loss_bbox` is built but unused); the
# localisation component weighted by the self-balance weight, 50 at the
# start and L_aLRP / L_loc of the previous epoch after each epoch
# (`ALRPSelfBalanceHook`).
alrp_dense_head = dict(
    reg_decoded_bbox=True,
    loss_cls=dict(
        _delete_=True, type='ALRPLoss', delta=1.0, sb_weight=50.0),
    loss_bbox=dict(_delete_=True, type='GIoULoss', loss_weight=1.0))
alrp_hooks = [dict(type='ALRPSelfBalanceHook')]
# Ranking-trained scores have no absolute scale: no score threshold.
rank_sort_test_cfg = dict(score_thr=0.0)
