# Quickstart twin of `faster-rcnn_r18-w32_fpn_ce_toyvoc.py` trained with the
# recommended two-stage recipe: the RaMBO AP loss (the paper's settings) plus
# a sigmoid cross-entropy on the same logits (`MixedRankLoss`,
# `../_base_/rambo-bce.py`), at cross-entropy's lr (0.04), as selected on
# DigitsVOC val. Its scores stay the cross-entropy's probabilities, so the
# CE twin's score threshold (0.05) stays.
# Batch: 8 images per process; lr 0.04 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./faster-rcnn_r18-w32_fpn_ce_toyvoc.py', '../_base_/rambo-bce.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_bce_loss)))
