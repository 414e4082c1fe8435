# The classification loss of every RaMBO config of this family: the RaMBO AP
# loss ranked once over all anchors of all FPN levels and images of the batch
# (`RaMBORetinaHead`, `RaMBOATSSHead`, docs/dense.md). A config pairs it with
# its focal twin and swaps the stock head for the RaMBO one:
#   _base_ = ['./<focal twin>.py', '../_base_/rambo-ap.py']
#   model = dict(
#       bbox_head=dict(type='RaMBO...Head', loss_cls=_base_.rambo_dense_loss),
#       test_cfg=dict(score_thr=0.0))
# A variable, not a `model`, because MMEngine does not merge one key from
# two bases. The paper's lambda and weights; sigmoid scores, margin 0 and no
# score threshold: docs/dense.md. No score memory: the batch already holds
# thousands of anchors per class, and tau = 7 would rank 8 times as many.
rambo_dense_loss = dict(
    _delete_=True,  # replaces the focal loss and its settings
    type='RaMBOAPLoss',
    score_space='sigmoid',
    margin=0.0,
    memory=0)

# RaMBO plus the stock focal loss (`MixedRankLoss`), exactly the focal twin's
# focal term (tested); used by the `_rambo-focal_` configs. RaMBO ranks the
# logits, the score space chosen on val (docs/dense.md).
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
