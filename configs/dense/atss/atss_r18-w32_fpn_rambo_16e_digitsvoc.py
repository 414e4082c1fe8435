# RaMBO AP loss twin of `atss_r18-w32_fpn_focal_16e_digitsvoc.py`
# (`RaMBOATSSHead`, `rambo_dense_loss` of `../_base_/rambo-ap.py`).
# Calibrate before thresholding (fit_score_calibration.py --write-config).
# Batch: 8 images per process; lr 0.02 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./atss_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rambo-ap.py']

model = dict(
    bbox_head=dict(type='RaMBOATSSHead', loss_cls=_base_.rambo_dense_loss),
    test_cfg=dict(score_thr=0.0))
# lr: selected on val by lab/rankloss_lab/studies/digitsvoc_dense_atss_16e.py
# (results: docs/evidence/digitsvoc_dense_atss_16e.md)
optim_wrapper = dict(optimizer=dict(lr=0.02))
