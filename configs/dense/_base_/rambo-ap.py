# The classification loss of every RaMBO config of this family: the RaMBO AP
# loss ranked once over all anchors of all FPN levels and images of the batch
# (`RaMBORetinaHead`, `RaMBOATSSHead`, docs/dense.md). A config pairs it with
# its focal twin and swaps the stock head for the RaMBO one:
#   _base_ = ['./<focal twin>.py', '../_base_/rambo-ap.py']
#   model = dict(
#       bbox_head=dict(type='RaMBO...Head', loss_cls=_base_.rambo_dense_loss),
#       test_cfg=dict(score_thr=0.0))
# It is a variable, not a `model` override, because MMEngine does not merge
# one key from two bases; like MMDetection's `train_pipeline`, it stays in
# the final config beside the `loss_cls` it fills.
#
# The paper's lambda 0.5 and 2:1 weights (the loss's defaults); sigmoid scores
# and no margin: at the stock heads' initialisation (logits -4.6 with std
# 0.003) the paper's margin of 0.15 leaves no score within reach of
# Algorithm 1, so the classifier would get no gradient at all; without it the
# sigmoid space gave the densest gradient (docs/dense.md). No
# score memory: the batch already holds thousands of anchors per class
# (tau = 7 was for 512-RoI batches) and memory would multiply the ranked
# length by 8.
#
# Rank-trained scores have no absolute scale, so the configs drop the
# stock score threshold (0.05, a probability, means nothing for them); the
# 1000 best anchors per level before NMS and the 100 best boxes per image
# are kept as for focal.
rambo_dense_loss = dict(
    _delete_=True,  # replaces the focal loss and its settings
    type='RaMBOAPLoss',
    score_space='sigmoid',
    margin=0.0,
    memory=0)

# RaMBO plus the stock focal loss (`MixedRankLoss`), the dense twin of the
# two-stage recipe (docs/evidence/pooled_mix_vs_ce.md): the RaMBO terms
# rank all anchors as above; the focal term gets every anchor's score, label,
# weight and the stock head's avg_factor, so it is exactly the focal twin's
# loss (tested). Used by the `_rambo-focal_` configs. RaMBO ranks the logits
# here, the score space chosen on val
# (docs/evidence/digitsvoc_dense_atss_16e.md); its planned
# tests against focal: docs/evidence/confirm_digitsvoc.md and
# docs/evidence/digitsvoc_dense_atss_rank_sort_16e.md.
rambo_focal_dense_loss = dict(
    _delete_=True,
    type='MixedRankLoss',
    rank_loss=dict(
        {k: v for k, v in rambo_dense_loss.items() if k != '_delete_'},
        score_space='logits'),
    aux_loss=dict(
        type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25,
        loss_weight=1.0),
    aux_name='loss_focal')
# The same mix ranking the sigmoid scores: the one the first RetinaNet
# DigitsVOC study measured (digitsvoc_dense_retinanet_16e).
rambo_sigmoid_focal_dense_loss = dict(
    rambo_focal_dense_loss,
    rank_loss=dict(rambo_focal_dense_loss['rank_loss'], score_space='sigmoid'))
