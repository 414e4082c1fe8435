# Faster R-CNN R50-FPN trained with the RaMBO AP loss on Pascal VOC07+12, as
# in the paper (Rolinek et al., CVPR 2020, Sec. 5.2; Table 5: 81.4 AP50
# paper number, 80.4 for CE). Only the classification loss of the box head,
# the learning rate and the test-time score threshold change with respect
# to the CE twin; the deviations every config of this directory shares
# (warm-up, clipping) are stated in `faster-rcnn_r50_fpn_ce_1x_voc0712.py`.
# Not trained in this project (no VOC, no GPU on its machine).
#
# Scores: RaMBO trains the order of the scores, not their meaning, so they are
# not probabilities and a display threshold such as DetInferencer's 0.3 keeps
# far too many boxes. Fit a calibration on images the model did not train on
# (for VOC: train without VOC2007 val, fit on it) and store it with the
# model (docs/thresholds.md):
#   python tools/test.py CONFIG CKPT --out val.pkl --cfg-options \
#       test_dataloader.dataset.ann_file=VOC2007/ImageSets/Main/val.txt
#   python tools/analysis_tools/fit_score_calibration.py val.pkl \
#       --data-root data/VOCdevkit --classes voc --split val \
#       --write-config MY_CONFIG.py --base CONFIG
# (writes MY_CONFIG.py: this config plus `calibration=(a, b)` on the loss).
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
