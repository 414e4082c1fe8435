# Faster R-CNN R101-FPN with the RaMBO AP loss, VOC07+12 (RaMBO paper, Table
# 5: 82.9 AP50 paper number, 82.4 for CE).
# Scores: rank-trained, not probabilities. Before thresholding them (e.g.
# DetInferencer's 0.3), fit a calibration on val and store it with the model:
#   python tools/analysis/fit_score_calibration.py VAL_DETECTIONS.pkl \
#       --data-root ROOT --write-config OUT.py --base <this config>
# (docs/faq.md).
_base_ = './faster-rcnn_r50_fpn_rambo_1x_voc0712.py'

model = dict(
    backbone=dict(
        depth=101,
        init_cfg=dict(
            type='Pretrained', checkpoint='torchvision://resnet101')))
