# aLRP Loss (Oksuz et al., NeurIPS 2020) on DINO, as variables
# (docs/architecture.md#configs): a config takes its focal twin and this file
# as bases, `bbox_head=_base_.alrp_head` and `custom_hooks=_base_.alrp_hooks`.
# `ALRPDINOHead`: every classification loss of DINO is aLRP over the batch's
# (query, class) logits (delta 1.0, as the dense aLRP heads), the matched
# boxes' (1 - GIoU) / 2 the positives' localisation errors; its localisation
# component (logged as `loss_iou`) replaces DINO's L1 and GIoU losses (built
# but unused; the matching keeps DINO's costs). Its weight starts at 50 and
# is set by `ALRPSelfBalanceHook` every period from iteration 0 (DINO has no
# lr warm-up; the period: docs/losses.md).
# lr and schedule: a config keeps its focal twin's. The aLRP paper's higher
# lr and 100-epoch schedule are its SGD recipe for dense detectors, where the
# step is the lr times the loss's gradient; AdamW's step does not grow with
# the gradient's scale, and DINO clips the gradient norm at 0.1.
alrp_head = dict(
    type='ALRPDINOHead',
    loss_cls=dict(_delete_=True, type='ALRPLoss', delta=1.0, sb_weight=50.0))
alrp_hooks = [dict(type='ALRPSelfBalanceHook')]
