# RaMBO AP loss twin of `retinanet_r50_fpn_focal_1x_voc0712.py`: the stock
# RetinaHead with the RaMBO loss of `../_base_/rambo-ap.py` as its
# classification loss (`RaMBORetinaHead`), at focal's lr.
# Scores: rank-trained, not probabilities: calibrate them before a threshold
# (fit_score_calibration.py --write-config, docs/thresholds.md).
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./retinanet_r50_fpn_focal_1x_voc0712.py', '../_base_/rambo-ap.py']

model = dict(
    bbox_head=dict(type='RaMBORetinaHead', loss_cls=_base_.rambo_dense_loss),
    test_cfg=dict(score_thr=0.0))
