# The two-stage recipe: the RaMBO AP loss (the paper's settings) plus a
# per-class sigmoid cross-entropy on the same foreground logits
# (`MixedRankLoss`, docs/losses.md): its scores stay probabilities.
# Evidence: docs/evidence/pooled_mix_vs_ce.md. A config takes it as
# `loss_cls=_base_.rambo_bce_loss` beside its CE twin and keeps that twin's
# lr (a variable, not a `model`: docs/architecture.md#configs).
rambo_bce_loss = dict(
    _delete_=True,  # replaces the twin's softmax cross-entropy
    type='MixedRankLoss',
    rank_loss=dict(type='RaMBOAPLoss'),
    aux_loss=dict(type='CrossEntropyLoss', use_sigmoid=True, loss_weight=1.0))

# Exact --resume and fp32 logits under --amp (docs/reliability.md).
custom_hooks = [dict(type='RankLossMemoryHook'), dict(type='RandomStateHook'),
                dict(type='RankLogitsFp32Hook')]
