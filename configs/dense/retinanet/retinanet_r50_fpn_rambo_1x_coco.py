# RaMBO AP loss twin of `retinanet_r50_fpn_focal_1x_coco.py`: the stock
# RetinaHead with the RaMBO loss of `../_base_/rambo-ap.py` as its
# classification loss (`RaMBORetinaHead`). lr: focal's (0.01 at batch 16). Not
# selected for this head yet: the DigitsVOC study
# (lab/rankloss_lab/studies/digitsvoc_dense_retinanet_16e.py) selects each loss's
# own rate on val.
# Scores: rank-trained, not probabilities: calibrate them before a threshold
# (fit_score_calibration.py --write-config, docs/thresholds.md).
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./retinanet_r50_fpn_focal_1x_coco.py', '../_base_/rambo-ap.py']

model = dict(
    bbox_head=dict(type='RaMBORetinaHead', loss_cls=_base_.rambo_dense_loss),
    test_cfg=dict(score_thr=0.0))
