# The mix twin of `mask-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py`
# (`../_base_/rambo-bce.py` on the box classifier), at the CE twin's score
# threshold: its scores stay probabilities.
# Batch: 8 images per process; lr 0.04 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./_base_/mask-rcnn_r18-w32_fpn_16e_digitsvoc.py',
          '../_base_/rambo-bce.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_bce_loss)))
optim_wrapper = dict(optimizer=dict(lr=0.04))
