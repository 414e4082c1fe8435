# The RaMBO AP loss with the paper's settings (Rolinek et al., CVPR 2020,
# Sec. 5.2): memory length tau = 7, margin 0.15, lambda 0.5, L_mAP and L_APC
# weighted 2 : 1. A config pairs it with its cross-entropy twin:
#   _base_ = ['./<ce twin>.py', '<this file>']
#   model = dict(roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_loss)),
#                test_cfg=dict(rcnn=dict(score_thr=0.0)))
# It is a variable, not a `model` override, because MMEngine does not merge
# one key from two bases; it stays in the final config beside the
# `loss_cls` it fills.
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
custom_hooks = [
    dict(type='RankLossMemoryHook'),
    dict(type='RandomStateHook'),
    dict(type='RankLogitsFp32Hook')
]
