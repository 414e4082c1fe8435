# RaMBO + focal twin of `retinanet_r50_fpn_focal_1x_coco.py` at focal's lr
# and score threshold (`rambo_focal_dense_loss`, `../_base_/rambo-ap.py`).
# Its evidence is ATSS's on DigitsVOC (docs/dense.md); not trained here.
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./retinanet_r50_fpn_focal_1x_coco.py', '../_base_/rambo-ap.py']

model = dict(
    bbox_head=dict(
        type='RaMBORetinaHead', loss_cls=_base_.rambo_focal_dense_loss))
