# DigitsVOC benchmark (`tools/make_digits_voc.py`): real handwritten digits
# (scikit-learn) on textured, cluttered 128 px backgrounds, with overlap,
# truncation, class imbalance and difficult flags, in the VOC2007 layout.
# Three splits: `train` for training, `val` for every choice of
# hyper-parameter (evaluated after each epoch), `test` reported once
# (`tools/test.py`). Model and pipeline are the quickstart's (Faster R-CNN
# R18 at 32 base channels, FPN, from scratch); the data, the number of
# classes and the schedule change: 16 epochs, lr / 10 after 12 (at the
# quickstart's 8 epochs cross-entropy was still at 19 AP50 on val and
# climbing). Cross-entropy baseline.
_base_ = '../quickstart/faster-rcnn_r18-w32_fpn_ce_toyvoc.py'

data_root = 'data/digits_voc/VOCdevkit/'
metainfo = dict(
    classes=('zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven',
             'eight', 'nine'))

model = dict(roi_head=dict(bbox_head=dict(num_classes=10)))

train_dataloader = dict(
    dataset=dict(
        data_root=data_root,
        metainfo=metainfo,
        ann_file='VOC2007/ImageSets/Main/train.txt'))
val_dataloader = dict(
    dataset=dict(
        data_root=data_root,
        metainfo=metainfo,
        ann_file='VOC2007/ImageSets/Main/val.txt'))
test_dataloader = dict(
    dataset=dict(
        data_root=data_root,
        metainfo=metainfo,
        ann_file='VOC2007/ImageSets/Main/test.txt'))

max_epochs = 16
# AP50 on val after every epoch: the learning curves of docs/evidence.md.
train_cfg = dict(max_epochs=max_epochs, val_interval=1)
# The quickstart's warm-up and step, the step after epoch 12 of 16.
param_scheduler = [
    _base_.param_scheduler[0],
    dict(_base_.param_scheduler[1], end=max_epochs, milestones=[12])
]
# lr: chosen on val from {0.01, 0.02, 0.04, 0.08} (tools/studies/, docs/evidence.md).
optim_wrapper = dict(optimizer=dict(lr=0.04))
