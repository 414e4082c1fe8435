# Faster R-CNN R50-FPN on VOC07+12 with the RaMBO config's AP loss (memory 7,
# margin 0.15, mAP + APC 2 : 1, the paper's lr 0.1) but sigmoid soft ranks (SRT
# Eq. 4) as the ranking surrogate instead of the blackbox ranker. Temperature
# 0.1 in logit units, the better of 1 and 0.1 on the toy VOC quickstart. Not a
# configuration of any paper and not trained on VOC here: no reference number
# exists.
# Scores: rank-trained, not probabilities: calibrate them before a threshold
# (fit_score_calibration.py --write-config, docs/thresholds.md).
# Batch: 8 images per process; lr 0.1 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = '../rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py'

model = dict(
    roi_head=dict(
        bbox_head=dict(
            loss_cls=dict(
                ranker=dict(type='SigmoidRanker', temperature=0.1)))))
