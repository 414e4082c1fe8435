# aLRP Loss (Oksuz et al., NeurIPS 2020) on DINO, as variables (MMEngine
# does not merge one key from two bases). A config pairs it with its focal
# twin:
#   _base_ = ['./<focal twin>.py', './_base_/alrp.py']
#   model = dict(bbox_head=_base_.alrp_head)
#   custom_hooks = _base_.alrp_hooks
#
# `ALRPDINOHead`: every classification loss of DINO is aLRP over the batch's
# (query, class) logits (delta 1.0, the dense aLRP heads' settings), the
# matched boxes' (1 - GIoU) / 2 as the positives' localisation errors; its
# localisation component (logged as `loss_iou`) replaces DINO's L1 and GIoU
# losses (their configs are built but unused; the matching keeps DINO's
# costs). The component's weight starts at 50 and is set by
# `ALRPSelfBalanceHook` every period (DINO has no lr warm-up: measured from
# iteration 0; the period: docs/losses.md).
alrp_head = dict(
    type='ALRPDINOHead',
    loss_cls=dict(_delete_=True, type='ALRPLoss', delta=1.0, sb_weight=50.0))
alrp_hooks = [dict(type='ALRPSelfBalanceHook')]
