# Quickstart: the DigitsVOC cross-entropy detector
# (`../digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py`) on the toy VOC
# that `tools/quickstart.py` writes (`make_toy_voc.py`: 128 px drawn objects,
# VOC's 20 classes, VOC2007 layout). Only the data and the schedule change:
# 8 epochs of 32 iterations, lr / 10 after epoch 6, val once at the end.
# Batch: 8 images per process; lr 0.04 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = '../digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py'

data_root = 'data/toy_voc/VOCdevkit/'
max_epochs = 8

model = dict(roi_head=dict(bbox_head=dict(num_classes=20)))

# VOCDataset's own 20 classes (no metainfo)
toy_voc = dict(
    type='VOCDataset',
    data_root=data_root,
    data_prefix=dict(sub_data_root='VOC2007/'))
train_dataloader = dict(
    dataset=dict(
        toy_voc,
        _delete_=True,
        ann_file='VOC2007/ImageSets/Main/trainval.txt',
        filter_cfg=dict(filter_empty_gt=True),
        pipeline=_base_.train_pipeline))
val_dataloader = dict(
    dataset=dict(
        toy_voc,
        _delete_=True,
        ann_file='VOC2007/ImageSets/Main/test.txt',
        test_mode=True,
        pipeline=_base_.test_pipeline,
        backend_args=None))
test_dataloader = val_dataloader

train_cfg = dict(max_epochs=max_epochs, val_interval=max_epochs)
param_scheduler = [
    _base_.param_scheduler[0],
    dict(_base_.param_scheduler[1], end=max_epochs, milestones=[6])
]
