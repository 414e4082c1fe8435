# `faster-rcnn_r50_fpn_rambo-bce_1x_voc0712.py` (RaMBO + sigmoid CE) trained
# on VOC2007 trainval only; the same training-set change as
# `faster-rcnn_r50_fpn_ce_1x_voc07.py`. Not trained in this project.
_base_ = './faster-rcnn_r50_fpn_rambo-bce_1x_voc0712.py'

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
