# RaMBO + focal twin of `retinanet_r18-w32_fpn_focal_16e_digitsvoc.py`: the
# stock RetinaHead trained with `rambo_focal_dense_loss`
# (`../_base_/rambo-ap.py`); the focal term keeps the stock score threshold
# meaningful.
# Batch: 8 images per process; lr 0.08 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './retinanet_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rambo-ap.py'
]

model = dict(
    bbox_head=dict(
        type='RaMBORetinaHead', loss_cls=_base_.rambo_focal_dense_loss))
# lr: selected on val (seed 5) by
# lab/rankloss_lab/studies/digitsvoc_dense_fixed_16e.py, as its
# pre-registered test ran it (docs/evidence/digitsvoc_dense_fixed_16e.md).
# WARNING: unstable as shipped: it collapsed on 1 of 5 test seeds (seed 8);
# the stability rule keeps it, as both neighbours collapsed on the selection
# seed, so no stable lr of the grid is known: expect some seeds to fail.
optim_wrapper = dict(optimizer=dict(lr=0.08))
