# ATSS with focal loss at the longer DigitsVOC budget: its 16-epoch twin
# `atss_r18-w32_fpn_focal_16e_digitsvoc.py` trained 56 epochs
# (lr / 10 after 42; `../_base_/schedule_56e_digitsvoc.py`), the run of
# `lab/rankloss_lab/studies/confirm_dense_long.py`, which tests it on a fresh split
# (pre-registered; val and test results: docs/evidence/confirm_dense_long.md).
# Batch: 8 images per process; lr 0.02 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './atss_r18-w32_fpn_focal_16e_digitsvoc.py',
    '../_base_/schedule_56e_digitsvoc.py'
]

train_cfg = dict(max_epochs=_base_.long_epochs)
param_scheduler = _base_.long_param_scheduler
# lr: selected on val by that study, on the mean of seeds 5 and 11 over
# {0.005, 0.01, 0.02, 0.04}
optim_wrapper = dict(optimizer=dict(lr=0.02))
