# DigitsVOC benchmark (docs/evidence.md#digitsvoc): `train` for training,
# `val` for every choice of hyper-parameter, `test` reported once. The
# cross-entropy baseline and root of the small-detector family, sized to
# train in minutes on 2 CPU cores.
# Batch: 8 images per process; lr 0.04 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = 'mmdet::pascal_voc/faster-rcnn_r50_fpn_1x_voc0712.py'

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)

data_root = 'data/digits_voc/VOCdevkit/'
metainfo = dict(
    classes=('zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven',
             'eight', 'nine'))
image_scale = (128, 128)
max_epochs = 16

# ResNet-18 at half width (32 base channels), no pretrained weights, every
# stage and BatchNorm trained; the FPN and heads narrowed to match. Anchors
# at half MMDetection's scale (16 to 256 px) for objects of 13 to 64 px.
model = dict(
    backbone=dict(
        depth=18,
        base_channels=32,
        frozen_stages=-1,
        norm_eval=False,
        init_cfg=None),
    neck=dict(in_channels=[32, 64, 128, 256], out_channels=64),
    rpn_head=dict(
        in_channels=64,
        feat_channels=64,
        anchor_generator=dict(scales=[4])),
    # 128 sampled RoIs per image (MMDetection: 512) and one RoIAlign sample
    # per bin: the CPU RoIAlign (backward) dominated the step time.
    roi_head=dict(
        bbox_roi_extractor=dict(
            roi_layer=dict(sampling_ratio=1), out_channels=64),
        bbox_head=dict(in_channels=64, fc_out_channels=256, num_classes=10)),
    train_cfg=dict(
        rpn_proposal=dict(nms_pre=500, max_per_img=300),
        rcnn=dict(sampler=dict(num=128))),
    test_cfg=dict(rpn=dict(nms_pre=500, max_per_img=300)))

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(type='Resize', scale=image_scale, keep_ratio=True),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackDetInputs')
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=image_scale, keep_ratio=True),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(
        type='PackDetInputs',
        meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape',
                   'scale_factor'))
]
train_dataloader = dict(
    batch_size=8,
    num_workers=2,
    dataset=dict(
        _delete_=True,  # not VOC0712's concatenation of two datasets
        type='VOCDataset',
        data_root=data_root,
        metainfo=metainfo,
        ann_file='VOC2007/ImageSets/Main/train.txt',
        data_prefix=dict(sub_data_root='VOC2007/'),
        filter_cfg=dict(filter_empty_gt=True),
        pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=8,
    dataset=dict(
        data_root=data_root,
        metainfo=metainfo,
        ann_file='VOC2007/ImageSets/Main/val.txt',
        pipeline=test_pipeline))
test_dataloader = dict(
    val_dataloader,
    dataset=dict(
        val_dataloader['dataset'], ann_file='VOC2007/ImageSets/Main/test.txt'))

# 16 epochs of 48 iterations, lr / 10 after epoch 12 (at 8 epochs CE was
# still climbing on val), val after every epoch. lr: chosen on val
# (lab/rankloss_lab/studies/digitsvoc_scratch_16e.py); each loss sets its own.
train_cfg = dict(max_epochs=max_epochs, val_interval=1)
optim_wrapper = dict(
    optimizer=dict(lr=0.04), clip_grad=dict(max_norm=35, norm_type=2))
param_scheduler = [
    dict(
        type='LinearLR', start_factor=0.001, by_epoch=False, begin=0,
        end=100),
    dict(
        type='MultiStepLR',
        begin=0,
        end=max_epochs,
        by_epoch=True,
        milestones=[12],
        gamma=0.1)
]
auto_scale_lr = dict(enable=True, base_batch_size=8)

default_hooks = dict(
    logger=dict(interval=10),
    checkpoint=dict(interval=1, max_keep_ckpts=2))
log_processor = dict(window_size=10)
randomness = dict(seed=0)
