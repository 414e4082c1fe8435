# RaMBO + focal twin of the `_focal_1x_coco.py` FCOS beside it
# (`RaMBOFCOSHead`, `rambo_focal_dense_loss` of `../_base_/rambo-ap.py`).
# lr and schedule: the focal twin's. Not trained at this scale (no GPU).
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './fcos_r50-caffe_fpn_gn-head-center-normbbox-centeronreg-giou_focal_1x_coco.py',
    '../_base_/rambo-ap.py'
]

model = dict(
    bbox_head=dict(
        type='RaMBOFCOSHead', loss_cls=_base_.rambo_focal_dense_loss))
