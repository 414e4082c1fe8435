# The Mask R-CNN recipe of DigitsVOC with instance masks: the DigitsVOC
# Faster R-CNN with MMDetection's mask branch narrowed the same way, on the
# COCO twin of DigitsVOC (`tools/dataset_converters/make_digits_voc.py
# --masks`; VOCDataset reads no masks), scored by `CocoMetric` (difficult
# digits are `iscrowd`).
_base_ = '../../digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py'

data_root = 'data/digits_voc/VOCdevkit/'
metainfo = _base_.metainfo
image_scale = _base_.image_scale

# MMDetection's mask branch (`mask-rcnn_r50_fpn.py`: 4 convs, 28 x 28
# masks) at 64 channels, one RoIAlign sample per bin as the box branch.
model = dict(
    type='MaskRCNN',
    data_preprocessor=dict(pad_mask=True),
    roi_head=dict(
        mask_roi_extractor=dict(
            type='SingleRoIExtractor',
            roi_layer=dict(type='RoIAlign', output_size=14, sampling_ratio=1),
            out_channels=64,
            featmap_strides=[4, 8, 16, 32]),
        mask_head=dict(
            type='FCNMaskHead',
            num_convs=4,
            in_channels=64,
            conv_out_channels=64,
            num_classes=10,
            loss_mask=dict(
                type='CrossEntropyLoss', use_mask=True, loss_weight=1.0))),
    train_cfg=dict(rcnn=dict(mask_size=28)),
    test_cfg=dict(rcnn=dict(mask_thr_binary=0.5)))

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', with_bbox=True, with_mask=True),
    dict(type='Resize', scale=image_scale, keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackDetInputs')
]
# the Faster R-CNN config's: CocoMetric reads the masks from the annotations
test_pipeline = _base_.test_pipeline
coco_split = dict(
    type='CocoDataset',
    data_root=data_root,
    metainfo=metainfo,
    data_prefix=dict(img='VOC2007/JPEGImages/'))
train_dataloader = dict(
    dataset=dict(
        coco_split,
        _delete_=True,
        ann_file='annotations/instances_train.json',
        filter_cfg=dict(filter_empty_gt=True),
        pipeline=train_pipeline))
val_dataloader = dict(
    dataset=dict(
        coco_split,
        _delete_=True,
        ann_file='annotations/instances_val.json',
        test_mode=True,
        pipeline=test_pipeline))
test_dataloader = dict(
    dataset=dict(
        coco_split,
        _delete_=True,
        ann_file='annotations/instances_test.json',
        test_mode=True,
        pipeline=test_pipeline))
val_evaluator = dict(
    _delete_=True,
    type='CocoMetric',
    ann_file=data_root + 'annotations/instances_val.json',
    metric=['bbox', 'segm'])
test_evaluator = dict(
    val_evaluator, ann_file=data_root + 'annotations/instances_test.json')
