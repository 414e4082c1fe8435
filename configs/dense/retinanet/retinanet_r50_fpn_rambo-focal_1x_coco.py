# RaMBO + focal twin of `retinanet_r50_fpn_focal_1x_coco.py` (MMDetection's
# RetinaNet, CocoMetric): the RaMBO AP loss over all anchors, ranking the
# logits, plus the stock focal loss (`rambo_focal_dense_loss` of
# `../_base_/rambo-ap.py`), at focal's lr (0.01 for a total batch of 16).
# Evidence: ATSS on DigitsVOC, ahead of focal
# (docs/evidence/digitsvoc_dense_atss_16e.md, docs/dense.md); unresolved on
# the DigitsVOC RetinaNet. Not trained on COCO
# in this project (no COCO, no GPU on its machine).
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./retinanet_r50_fpn_focal_1x_coco.py', '../_base_/rambo-ap.py']

model = dict(
    bbox_head=dict(
        type='RaMBORetinaHead', loss_cls=_base_.rambo_focal_dense_loss))
