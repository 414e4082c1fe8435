# Faster R-CNN R50-FPN, cross-entropy classification loss, Pascal VOC07+12:
# the CE baseline of the RaMBO paper (Rolinek et al., CVPR 2020, Sec. 5.2 and
# Table 5: 80.4 AP50 paper number), trained with the paper's schedule. Every
# config in this directory inherits this one: the `_rambo_` configs swap the
# classification loss and the learning rate, the others the backbone or the
# training data.
# Batch: 8 images per process; lr 0.005 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = 'mmdet::pascal_voc/faster-rcnn_r50_fpn_1x_voc0712.py'

# Declared here so every child (and every project inheriting a child) gets it.
custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)

# Paper: 12 epochs, batch 8 on a single GPU, lr divided by 10 after epoch 9.
# MMDetection's base already runs 12 data epochs as 4 runner epochs over
# RepeatDataset(times=3) with the step after runner epoch 3 (= data epoch 9),
# so only the batch size changes. Test: VOC2007 test, VOCMetric AP50 with
# 11-point interpolation, as in the base.
train_dataloader = dict(batch_size=8)

# The paper takes its CE baseline from MMDetection (lr 0.01 for 16 images);
# for batch 8 the linear scaling rule gives 0.005.
optim_wrapper = dict(
    optimizer=dict(lr=0.005),
    # Deviation from MMDetection 3's VOC config, which does not clip: the VOC
    # configs of MMDetection 1.x, the toolbox version of the paper's time,
    # clipped the gradient norm at 35; kept for both losses.
    clip_grad=dict(max_norm=35, norm_type=2))

# Deviation from the paper, which states no warm-up: a linear warm-up over
# the first 500 iterations, used for both losses so that only the loss and
# the learning rate differ between a `_ce_` config and its `_rambo_` twin;
# it keeps the first steps of a RaMBO run at the paper's lr 0.1 from diverging.
param_scheduler = [
    dict(
        type='LinearLR', start_factor=0.001, by_epoch=False, begin=0,
        end=500),
    dict(
        type='MultiStepLR',
        begin=0,
        end=_base_.max_epochs,
        by_epoch=True,
        milestones=[3],
        gamma=0.1)
]

auto_scale_lr = dict(enable=True, base_batch_size=8)
