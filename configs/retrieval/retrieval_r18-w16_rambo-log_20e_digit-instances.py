# Retrieval quickstart, `python tools/retrieval_quickstart.py`: the RaMBO
# recall loss trains the small ResNet-18 from scratch to retrieve held-out
# handwritten digit *instances* across views (position, size, rotation,
# colours; `_base_/datasets/digit_instances.py`), where raw pixels and the
# untrained network fail. Settings chosen on the val instances, reported on
# the test instances (docs/retrieval.md).
# Batch: 60 images per process; lr 0.001 is for a total batch of 60,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './_base_/models/retrieval_r18-w16_digits.py',
    './_base_/datasets/digit_instances.py',
    './_base_/schedules/adam_10e_digits.py', './_base_/default_runtime.py'
]
model = dict(
    data_preprocessor=dict(mean=[127.5] * 3, std=[127.5] * 3),
    # MMDetection's zero-initialised last BatchNorm of each residual block
    # left the network untrainable here (a 600-step probe with and without
    # it: docs/retrieval.md)
    backbone=dict(in_channels=3, zero_init_residual=False),
    # lambda and memory chosen on val (seed 0, R@1 at the last evaluation, lr
    # 1e-3) among lambda 0.2 / 1 / 4 with memory 0 and memory 3 (Table 9's)
    # at lambda 0.2 / 1; lr on val over seeds 0-2 (seed 0 alone had
    # preferred 3e-3, which then failed on seed 1): the val R@1 of each in
    # docs/retrieval.md; the mean val R@1 over the 3 seeds of each lr:
    # docs/evidence/digit_instances_losses.md (the study also trains FastAP
    # and batch-hard triplet here, each at its own lr; docs/retrieval.md)
    loss=dict(type='RaMBORecallLoss', weighting='log', lambda_val=1.0,
              margin=0.02, memory=0))
# Adam lr 1e-3 (embedding x 10), weight decay 4e-4 (the schedule's);
# 20 epochs of 66 batches, lr x 0.3 after 15, val every 5 epochs
train_cfg = dict(max_epochs=20, val_interval=5)
param_scheduler = [
    dict(type='MultiStepLR', by_epoch=True, milestones=[15], gamma=0.3)
]
default_hooks = dict(logger=dict(interval=20), checkpoint=dict(interval=5))
randomness = dict(seed=0)
