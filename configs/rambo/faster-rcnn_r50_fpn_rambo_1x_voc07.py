# Faster R-CNN R50-FPN with the RaMBO AP loss, trained on VOC2007 trainval only
# (RaMBO paper, Table 5, first row: 75.7 AP50 paper number, 74.2 for CE).
# Same training-set change as `faster-rcnn_r50_fpn_ce_1x_voc07.py`.
# Scores: rank-trained, not probabilities. Before thresholding them (e.g.
# DetInferencer's 0.3), fit a calibration on val and store it with the model:
#   python tools/analysis/fit_score_calibration.py VAL_DETECTIONS.pkl \
#       --data-root ROOT --write-config OUT.py --base <this config>
# (docs/faq.md).
_base_ = './faster-rcnn_r50_fpn_rambo_1x_voc0712.py'

train_dataloader = dict(
    dataset=dict(
        dataset=dict(
            _delete_=True,
            type='VOCDataset',
            data_root=_base_.data_root,
            ann_file='VOC2007/ImageSets/Main/trainval.txt',
            data_prefix=dict(sub_data_root='VOC2007/'),
            filter_cfg=dict(
                filter_empty_gt=True, min_size=32, bbox_min_size=32),
            pipeline=_base_.train_pipeline,
            backend_args=_base_.backend_args)))
