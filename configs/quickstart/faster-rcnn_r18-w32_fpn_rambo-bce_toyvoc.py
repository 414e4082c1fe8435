# Quickstart twin of `faster-rcnn_r18-w32_fpn_ce_toyvoc.py` with the
# two-stage recipe (`../_base_/rambo-bce.py`) at CE's lr and score threshold,
# as selected on DigitsVOC val.
# Batch: 8 images per process; lr 0.04 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./faster-rcnn_r18-w32_fpn_ce_toyvoc.py', '../_base_/rambo-bce.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_bce_loss)))
