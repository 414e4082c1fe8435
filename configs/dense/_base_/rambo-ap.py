# The dense RaMBO recipes, as variables (docs/architecture.md#configs): a
# `_rambo_` config takes its focal twin and this file as bases, a RaMBO head
# and `loss_cls=_base_.rambo_dense_loss` (docs/dense.md). RaMBO ranks once
# over all anchors of all levels and images: the paper's lambda and weights,
# margin 0, and no score memory (the batch already holds thousands of
# anchors per class; tau = 7 would rank 8 times as many).
rambo_dense_loss = dict(
    _delete_=True,  # replaces the focal loss and its settings
    type='RaMBOAPLoss',
    score_space='sigmoid',
    margin=0.0,
    memory=0)

# RaMBO on the logits (chosen on val) plus exactly the focal twin's focal
# term (`MixedRankLoss`, tested): the `_rambo-focal_` configs.
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
# The same mix on the sigmoid scores, as digitsvoc_dense_retinanet_16e ran it.
rambo_sigmoid_focal_dense_loss = dict(
    rambo_focal_dense_loss,
    rank_loss=dict(rambo_focal_dense_loss['rank_loss'], score_space='sigmoid'))
