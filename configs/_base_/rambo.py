# The RaMBO AP loss with the paper's settings (Rolinek et al., CVPR 2020,
# Sec. 5.2): memory length tau = 7, margin 0.15, lambda 0.5, L_mAP and L_APC
# weighted 2 : 1. A config takes it as `loss_cls=_base_.rambo_loss` beside
# its CE twin, with `test_cfg=dict(rcnn=dict(score_thr=0.0))` (a variable,
# not a `model`: docs/architecture.md#configs; it stays in the final config).
rambo_loss = dict(
    _delete_=True,  # replaces the twin's softmax cross-entropy
    type='RaMBOAPLoss',
    memory=7,
    margin=0.15,
    lambda_val=0.5,
    map_weight=2 / 3,
    apc_weight=1 / 3,
    loss_weight=1.0)

# Exact --resume and fp32 logits under --amp (docs/reliability.md).
custom_hooks = [dict(type='RankLossMemoryHook'), dict(type='RandomStateHook'),
                dict(type='RankLogitsFp32Hook')]
