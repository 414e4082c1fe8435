# RaMBO + focal twin of `fcos_r18-w32_fpn_focal_16e_digitsvoc.py`:
# `RaMBOFCOSHead` (box and centerness losses, and the test scores with the
# predicted centerness, unchanged) trained with the RaMBO AP loss over all
# points of all levels and images plus the stock focal loss (`MixedRankLoss`
# of `../_base_/rambo-ap.py`, ranking the logits); the detector predicts with
# the stock sigmoid and score threshold, which the focal term keeps
# meaningful (docs/dense.md).
# Batch: 8 images per process; lr 0.04 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./fcos_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rambo-ap.py']

model = dict(
    bbox_head=dict(
        type='RaMBOFCOSHead', loss_cls=_base_.rambo_focal_dense_loss))
# lr: selected on val (mean of seeds 5 and 11) by
# lab/rankloss_lab/studies/digitsvoc_dense_fcos_16e.py from
# {0.0025, 0.005, 0.01, 0.02}, grown by the study's
# edge rule to 0.04 and 0.08 while the best was at the upper edge;
# results: docs/evidence/digitsvoc_dense_fcos_16e.md.
optim_wrapper = dict(optimizer=dict(lr=0.04))
