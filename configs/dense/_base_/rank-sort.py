# The losses and head settings of every Rank & Sort (RS) and aLRP config,
# from the papers (Oksuz et al., ICCV 2021 and NeurIPS 2020; docs/losses.md)
# as set in the authors' code, as variables (docs/architecture.md#configs):
# a config takes its focal / CE twin and this file as bases and swaps the
# head (docs/dense.md#rank--sort-and-alrp).
# Box coder of every RS / aLRP head: the authors' stds (docs/dense.md).
rank_sort_bbox_coder = dict(
    type='DeltaXYWHBBoxCoder',
    target_means=[0., 0., 0., 0.],
    target_stds=[0.1, 0.1, 0.2, 0.2])
# RS: delta 0.5, IoU labels, the RS box loss on decoded boxes
# (docs/losses.md#rank--sort-alrp-and-ap-loss).
rank_sort_loss = dict(_delete_=True, type='RankSortLoss', delta=0.5)
rank_sort_dense_head = dict(
    reg_decoded_bbox=True,
    bbox_coder=rank_sort_bbox_coder,
    loss_cls=rank_sort_loss,
    loss_bbox=dict(_delete_=True, type='GIoULoss', loss_weight=1.0))
# RS-R-CNN: the same loss in the bbox head, and no RoI sampling (a
# RandomSampler with an unreachable `num` and pos_fraction 1).
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
# RS-R-CNN's RPN (the authors' code): RS over all anchors, weighted by 0.2;
# a config takes both `rank_sort_rpn_head` and `rank_sort_rpn_sampler`.
rank_sort_rpn_head = dict(
    type='RankSortRPNHead',
    reg_decoded_bbox=True,
    bbox_coder=rank_sort_bbox_coder,
    loss_cls=dict(
        _delete_=True, type='RankSortLoss', delta=0.5, loss_weight=0.2),
    loss_bbox=dict(_delete_=True, type='GIoULoss', loss_weight=1.0))
rank_sort_rpn_sampler = dict(_delete_=True, type='PseudoSampler')
# aLRP: delta 1.0, (1 - GIoU) / 2 errors (`loss_bbox` is built but unused),
# the self-balance weight 50 at the start, then set by `ALRPSelfBalanceHook`
# (its period: docs/losses.md#rank--sort-alrp-and-ap-loss).
alrp_dense_head = dict(
    reg_decoded_bbox=True,
    bbox_coder=rank_sort_bbox_coder,
    loss_cls=dict(
        _delete_=True, type='ALRPLoss', delta=1.0, sb_weight=50.0),
    loss_bbox=dict(_delete_=True, type='GIoULoss', loss_weight=1.0))
alrp_hooks = [dict(type='ALRPSelfBalanceHook')]
# Ranking-trained scores have no absolute scale: no score threshold.
rank_sort_test_cfg = dict(score_thr=0.0)
