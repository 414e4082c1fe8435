# Faster R-CNN R101-FPN with the RaMBO AP loss, VOC07+12 (RaMBO paper,
# Table 5: 82.9 AP50 paper number, 82.4 for CE): the CE twin with the
# paper's loss and lr. Not trained in this project.
# Calibrate before thresholding (fit_score_calibration.py --write-config).
# Batch: 8 images per process; lr 0.1 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./faster-rcnn_r101_fpn_ce_1x_voc0712.py', '../_base_/rambo.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_loss)),
    test_cfg=dict(rcnn=dict(score_thr=0.0)))

# The paper's lr, 20x CE's (DigitsVOC val chose 2x: the `_lr0.01_` config)
optim_wrapper = dict(optimizer=dict(lr=0.1))
