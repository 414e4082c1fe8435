# RaMBO AP loss twin of `retinanet_r50_fpn_focal_1x_coco.py`: the stock
# RetinaHead with the RaMBO loss of `../_base_/rambo-ap.py` as its
# classification loss (`RaMBORetinaHead`). lr: focal's (0.01 at batch 16). Not
# selected for this head yet: the DigitsVOC study
# (lab/rankloss_lab/studies/digitsvoc_dense_retinanet_16e.py) selects each loss's
# own rate on val. Scores: rank-trained, not probabilities. Before thresholding
# them (e.g. DetInferencer's 0.3), fit a calibration on val and store it with
# the model:
#   python tools/analysis_tools/fit_score_calibration.py VAL_DETECTIONS.pkl \
#       --data-root ROOT --write-config OUT.py --base <this config>
# (docs/thresholds.md).
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./retinanet_r50_fpn_focal_1x_coco.py', '../_base_/rambo-ap.py']

model = dict(
    bbox_head=dict(type='RaMBORetinaHead', loss_cls=_base_.rambo_dense_loss),
    test_cfg=dict(score_thr=0.0))
