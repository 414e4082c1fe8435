# RaMBO + focal twin of `fcos_r18-w32_fpn_focal_16e_digitsvoc.py`:
# `RaMBOFCOSHead` (box and centerness losses and test scores unchanged)
# trained with `rambo_focal_dense_loss` (`../_base_/rambo-ap.py`); the focal
# term keeps the stock score threshold meaningful (docs/dense.md).
# Batch: 8 images per process; lr 0.04 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./fcos_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rambo-ap.py']

model = dict(
    bbox_head=dict(
        type='RaMBOFCOSHead', loss_cls=_base_.rambo_focal_dense_loss))
# lr: selected on val by the focal twin's study (grid grown to 0.08)
optim_wrapper = dict(optimizer=dict(lr=0.04))
