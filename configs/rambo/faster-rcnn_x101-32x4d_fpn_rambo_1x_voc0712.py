# Faster R-CNN ResNeXt101-32x4d-FPN with the RaMBO AP loss, VOC07+12 (RaMBO
# paper, Table 5: 83.6 AP50 paper number, 83.2 for CE).
# Scores: rank-trained, not probabilities. Before thresholding them (e.g.
# DetInferencer's 0.3), fit a calibration on val and store it with the model:
#   python tools/analysis/fit_score_calibration.py VAL_DETECTIONS.pkl \
#       --data-root ROOT --write-config OUT.py --base <this config>
# (docs/faq.md).
_base_ = './faster-rcnn_r50_fpn_rambo_1x_voc0712.py'

model = dict(
    backbone=dict(
        type='ResNeXt',
        depth=101,
        groups=32,
        base_width=4,
        init_cfg=dict(
            type='Pretrained', checkpoint='open-mmlab://resnext101_32x4d')))
