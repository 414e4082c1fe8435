# RaMBO + focal twin of `atss_r50_fpn_focal_1x_coco.py`: the stock ATSSHead
# (box and centerness losses unchanged) trained with the RaMBO AP loss over
# all anchors plus the stock focal loss (`MixedRankLoss` of
# `../_base_/rambo-ap.py`, ranking the logits). On DigitsVOC this mix beat
# focal alone at focal's own lr (docs/evidence/digitsvoc_dense_atss_16e.md,
# docs/dense.md); lr here:
# focal's (0.01 at batch 16), as there. Not trained at this scale (no GPU).
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./atss_r50_fpn_focal_1x_coco.py', '../_base_/rambo-ap.py']

model = dict(
    bbox_head=dict(
        type='RaMBOATSSHead', loss_cls=_base_.rambo_focal_dense_loss))
