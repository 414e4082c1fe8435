# aLRP Loss RetinaNet R50 FPN on COCO, the authors' recipe:
# kemaloksuz/aLRPLoss,
# configs/alrp_loss/alrp_loss_retinanet_r50_fpn_100e_coco500.py and its data,
# configs/_base_/datasets/coco500_detection_augm.py (MMDetection 2.x); what
# it sets: docs/dense.md#rank--sort-and-alrp. On MMDetection's recipe:
# `retinanet_r50_fpn_alrp_mmdet-1x_coco.py`.
# Batch: 8 images per process; lr 0.008 is for a total batch of 32,
# the authors' 4 GPUs x 8 images: `tools/dist_train.sh CONFIG 4` trains it,
# each process ranking its own 8 images as theirs did (docs/multi_gpu.md).
_base_ = ['./retinanet_r50_fpn_focal_1x_coco.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(
        _base_.alrp_dense_head,
        type='ALRPRetinaHead',
        anchor_generator=dict(scales_per_octave=2)))

train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(
        type='PhotoMetricDistortion',
        brightness_delta=32,
        contrast_range=(0.5, 1.5),
        saturation_range=(0.5, 1.5),
        hue_delta=18),
    dict(
        type='Expand',
        mean=[123.675, 116.28, 103.53],  # the data preprocessor's, RGB
        to_rgb=True,
        ratio_range=(1, 4)),
    dict(
        type='MinIoURandomCrop',
        min_ious=(0.1, 0.3, 0.5, 0.7, 0.9),
        min_crop_size=0.3),
    dict(type='Resize', scale=(512, 512), keep_ratio=False),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackDetInputs')
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(833, 500), keep_ratio=True),
    dict(type='LoadAnnotations', with_bbox=True),
    dict(
        type='PackDetInputs',
        meta_keys=('img_id', 'img_path', 'ori_shape', 'img_shape',
                   'scale_factor'))
]
train_dataloader = dict(batch_size=8, dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader

max_epochs = 100
train_cfg = dict(max_epochs=max_epochs)
# MMDetection's warm-up (theirs too), the steps of AP Loss's schedule
param_scheduler = [
    _base_.param_scheduler[0],
    dict(_base_.param_scheduler[1], end=max_epochs, milestones=[60, 80])
]
optim_wrapper = dict(optimizer=dict(lr=0.008))
auto_scale_lr = dict(base_batch_size=32)
custom_hooks = [dict(type='ALRPSelfBalanceHook', period_epochs=1, begin=0)]
