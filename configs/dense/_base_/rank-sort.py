# The losses and head settings of every Rank & Sort (RS) and aLRP config,
# written from the papers (Oksuz et al., ICCV 2021 and NeurIPS 2020;
# docs/losses.md) and set as in the authors' code. A config pairs them
# with its focal / cross-entropy twin and swaps the stock head for the
# RS / aLRP one:
#   _base_ = ['./<focal twin>.py', '../_base_/rank-sort.py']
#   model = dict(bbox_head=dict(_base_.rank_sort_dense_head,
#                               type='RankSortRetinaHead'))
# Variables, not a `model`, because MMEngine does not merge one key from two
# bases.
#
# Box coder of every RS / aLRP head: target_stds [0.1, 0.1, 0.2, 0.2], as in
# the authors' configs (and MMDetection's ATSS; MMDetection's RetinaNet uses
# [1, 1, 1, 1]: with a
# box loss on decoded boxes the stds scale how far one unit of the
# regression output moves a box, 5 to 10 times further with [1, 1, 1, 1]).
rank_sort_bbox_coder = dict(
    type='DeltaXYWHBBoxCoder',
    target_means=[0., 0., 0., 0.],
    target_stds=[0.1, 0.1, 0.2, 0.2])
# RS: delta 0.5 in logit units, no focal loss, no sampling heuristics; the
# positives' labels are the IoUs of their predicted boxes (the heads compute
# them); the box loss is GIoU on decoded boxes, each positive's weighted by
# its detached highest class score (the heads' `box_weighting='score'`, the
# default; `box_weighting='uniform'` in the head dict averages them
# uniformly, the earlier behaviour), then rescaled by L_RS / L_box at every
# iteration (the paper's loss-value-based weighting, so its `loss_weight`
# does not matter). ATSS heads drop the centerness branch, as the RS paper
# does.
rank_sort_loss = dict(_delete_=True, type='RankSortLoss', delta=0.5)
rank_sort_dense_head = dict(
    reg_decoded_bbox=True,
    bbox_coder=rank_sort_bbox_coder,
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
# RS-R-CNN's RPN (the authors' code): RS over all anchors of the batch (one
# class, objectness; no anchor sampling), the RS term weighted by 0.2, GIoU
# on decoded boxes weighted by the positives' scores and rescaled to the
# (weighted) RS value, the box coder above. Use both variables:
#   model = dict(
#       rpn_head=_base_.rank_sort_rpn_head,
#       train_cfg=dict(rpn=dict(sampler=_base_.rank_sort_rpn_sampler)))
rank_sort_rpn_head = dict(
    type='RankSortRPNHead',
    reg_decoded_bbox=True,
    bbox_coder=rank_sort_bbox_coder,
    loss_cls=dict(
        _delete_=True, type='RankSortLoss', delta=0.5, loss_weight=0.2),
    loss_bbox=dict(_delete_=True, type='GIoULoss', loss_weight=1.0))
rank_sort_rpn_sampler = dict(_delete_=True, type='PseudoSampler')
# aLRP: delta 1.0; localisation errors (1 - GIoU) / 2 of the positives'
# decoded boxes (computed by the head; `loss_bbox` is built but unused); the
# localisation component weighted by the self-balance (SB) weight: 50 at
# the start, then (`ALRPSelfBalanceHook`) set to (mean L_cls + mean L_loc)
# / mean L_loc of the last `period` iterations that had positives, measured
# from the end of the learning-rate warm-up on (never during it). Default
# period (`alrp_hooks`): min(3665, (max_iters - warm-up) // 8), the authors'
# 3,665 iterations or an eighth of the training after the warm-up when that
# is shorter: 83 on DigitsVOC (768 iterations, warm-up 100: 8 updates),
# 3,665 on COCO at batch 16 (12 x 7,330 iterations: half an epoch; the
# authors' 3,665 are one epoch at their batch of 32, and their recipes,
# `*_alrp_100e_coco-512.py`, set `period_epochs=1, begin=0` instead).
# `dict(type='ALRPSelfBalanceHook', period='epoch')` is the earlier
# once-per-epoch update (warm-up included: on DigitsVOC it set SB to
# thousands inside the warm-up).
alrp_dense_head = dict(
    reg_decoded_bbox=True,
    bbox_coder=rank_sort_bbox_coder,
    loss_cls=dict(
        _delete_=True, type='ALRPLoss', delta=1.0, sb_weight=50.0),
    loss_bbox=dict(_delete_=True, type='GIoULoss', loss_weight=1.0))
alrp_hooks = [dict(type='ALRPSelfBalanceHook')]
# Ranking-trained scores have no absolute scale: no score threshold. (From
# scratch on DigitsVOC every test score of an RS-trained ATSS stayed below
# MMDetection's 0.05, which would leave no box; a comparison with a focal or
# CE twin evaluates every method at threshold 0, as
# lab/rankloss_lab/studies/digitsvoc_dense_fixed_16e.py does.)
rank_sort_test_cfg = dict(score_thr=0.0)
