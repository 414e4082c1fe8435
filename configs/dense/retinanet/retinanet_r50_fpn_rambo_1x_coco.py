# RaMBO AP loss twin of `retinanet_r50_fpn_focal_1x_coco.py`
# (`RaMBORetinaHead`, `rambo_dense_loss` of `../_base_/rambo-ap.py`) at
# focal's lr, not selected for this head.
# Calibrate before thresholding (fit_score_calibration.py --write-config).
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./retinanet_r50_fpn_focal_1x_coco.py', '../_base_/rambo-ap.py']

model = dict(
    bbox_head=dict(type='RaMBORetinaHead', loss_cls=_base_.rambo_dense_loss),
    test_cfg=dict(score_thr=0.0))
