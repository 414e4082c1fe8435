# The RaMBO VOC07+12 config with sigmoid soft ranks (SRT Eq. 4, temperature
# 0.1 in logit units, the better of 1 and 0.1 on the toy VOC) in place of
# the blackbox ranker. Not a configuration of any paper and not trained on
# VOC here: no reference number exists.
# Calibrate before thresholding (fit_score_calibration.py --write-config).
# Batch: 8 images per process; lr 0.1 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = '../rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py'

model = dict(
    roi_head=dict(
        bbox_head=dict(
            loss_cls=dict(
                ranker=dict(type='SigmoidRanker', temperature=0.1)))))
