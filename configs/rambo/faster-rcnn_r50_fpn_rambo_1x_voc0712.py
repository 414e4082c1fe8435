# Faster R-CNN R50-FPN trained with the RaMBO AP loss on Pascal VOC07+12, as
# in the paper (Rolinek et al., CVPR 2020, Sec. 5.2; Table 5: 81.4 AP50
# paper number, 80.4 for CE). Only the classification loss of the box head,
# the learning rate and the test-time score threshold change with respect
# to the CE twin; the deviations every config of this directory shares
# (warm-up, clipping) are stated in `faster-rcnn_r50_fpn_ce_1x_voc0712.py`.
# Not trained in this project (no VOC, no GPU on its machine).
# Scores: rank-trained, not probabilities: calibrate them before a threshold
# (fit_score_calibration.py --write-config, docs/thresholds.md).
# Batch: 8 images per process; lr 0.1 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./faster-rcnn_r50_fpn_ce_1x_voc0712.py', '../_base_/rambo.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_loss)),
    # rank-trained scores have no absolute scale: keep every box
    test_cfg=dict(rcnn=dict(score_thr=0.0)))

# The paper's lr, 20x CE's; RaMBO's rate chosen on DigitsVOC val was 2x:
# `faster-rcnn_r50_fpn_rambo_lr0.01_1x_voc0712.py`.
optim_wrapper = dict(optimizer=dict(lr=0.1))
