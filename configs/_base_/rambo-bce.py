# The two-stage recipe: the RaMBO AP loss (the
# paper's settings, the loss's defaults: tau 7, margin 0.15, lambda 0.5,
# L_mAP : L_APC = 2 : 1) plus a per-class sigmoid cross-entropy (weight 1) on
# the same foreground logits (`MixedRankLoss`). The rank loss orders the
# scores; the cross-entropy gives every score a gradient from the first step
# and keeps the scores probabilities, so a normal score threshold works at
# test time (no calibration needed). Evidence: every pre-registered test of
# the mix against cross-entropy (DigitsVOC, Faster R-CNN R18-w32, each at
# cross-entropy's own lr) and their pooled estimate, in
# docs/evidence/pooled_mix_vs_ce.md.
#
# A config pairs it with its cross-entropy twin and keeps that twin's lr:
#   _base_ = ['./<ce twin>.py', '<this file>']
#   model = dict(roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_bce_loss)))
# It is a variable, not a `model` override, because MMEngine does not merge
# one key from two bases; it stays in the final config beside the
# `loss_cls` it fills.
rambo_bce_loss = dict(
    _delete_=True,  # replaces the twin's softmax cross-entropy
    type='MixedRankLoss',
    rank_loss=dict(type='RaMBOAPLoss'),
    aux_loss=dict(type='CrossEntropyLoss', use_sigmoid=True, loss_weight=1.0))

# The rank loss remembers the last 7 batches' scores: these hooks put that
# memory and the random state into every checkpoint, so `--resume` continues
# exactly (docs/reliability.md).
# Under --amp the classifier's logits stay fp32: fp16 rounding ties RaMBO's
# scores (engine/precision.py); without autocast nothing changes.
custom_hooks = [
    dict(type='RankLossMemoryHook'),
    dict(type='RandomStateHook'),
    dict(type='RankLogitsFp32Hook')
]
