# Faster R-CNN R50-FPN trained with the RaMBO AP loss on Pascal VOC07+12, as
# in the paper (Rolinek et al., CVPR 2020, Sec. 5.2; Table 5: 81.4 AP50
# paper number, 80.4 for CE): the CE twin with the paper's loss, lr and no
# score threshold; the deviations every config here shares (warm-up,
# clipping): `faster-rcnn_r50_fpn_ce_1x_voc0712.py`. Not trained in this
# project (no VOC, no GPU).
# Calibrate before thresholding (fit_score_calibration.py --write-config).
# Batch: 8 images per process; lr 0.1 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./faster-rcnn_r50_fpn_ce_1x_voc0712.py', '../_base_/rambo.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_loss)),
    test_cfg=dict(rcnn=dict(score_thr=0.0)))

# The paper's lr, 20x CE's (DigitsVOC val chose 2x: the `_lr0.01_` config)
optim_wrapper = dict(optimizer=dict(lr=0.1))
