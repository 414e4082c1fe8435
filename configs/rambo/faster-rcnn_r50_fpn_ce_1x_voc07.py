# Faster R-CNN R50-FPN, cross-entropy, on VOC2007 trainval only (RaMBO paper,
# Table 5, first row: 74.2 AP50 paper number): the VOC07+12 config with its
# training set replaced (MMDetection has no VOC07-only config).
# Batch: 8 images per process; lr 0.005 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = './faster-rcnn_r50_fpn_ce_1x_voc0712.py'

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
