# Faster R-CNN R101-FPN with the RaMBO AP loss, VOC07+12 (RaMBO paper, Table 5:
# 82.9 AP50 paper number, 82.4 for CE): `faster-rcnn_r101_fpn_ce_1x_voc0712.py`
# with the paper's loss and lr (as `faster-rcnn_r50_fpn_rambo_1x_voc0712.py`).
# Not trained in this project.
# Scores: rank-trained, not probabilities: calibrate them before a threshold
# (fit_score_calibration.py --write-config, docs/thresholds.md).
# Batch: 8 images per process; lr 0.1 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./faster-rcnn_r101_fpn_ce_1x_voc0712.py', '../_base_/rambo.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_loss)),
    # rank-trained scores have no absolute scale: keep every box
    test_cfg=dict(rcnn=dict(score_thr=0.0)))

# The paper's lr, 20x CE's; RaMBO's rate chosen on DigitsVOC val was 2x:
# `faster-rcnn_r50_fpn_rambo_lr0.01_1x_voc0712.py`.
optim_wrapper = dict(optimizer=dict(lr=0.1))
