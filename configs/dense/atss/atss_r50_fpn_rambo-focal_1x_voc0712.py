# RaMBO + focal twin of `atss_r50_fpn_focal_1x_voc0712.py`: the stock ATSSHead
# trained with `rambo_focal_dense_loss` (`../_base_/rambo-ap.py`) at focal's
# lr; its evidence is DigitsVOC's (docs/dense.md). Not trained at this scale.
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./atss_r50_fpn_focal_1x_voc0712.py', '../_base_/rambo-ap.py']

model = dict(
    bbox_head=dict(
        type='RaMBOATSSHead', loss_cls=_base_.rambo_focal_dense_loss))
