# Batch-hard triplet loss on CUB-200-2011 with the AUC paper's small-dataset
# schedule, SGD lr 1e-3 x 0.1 every 3,000 steps (momentum 0.9 is ours).
# Batch: 128 images per process; lr 0.001 is for a total batch of 128,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['../_base_/losses/triplet-bh.py', '../_base_/datasets/cub200.py']
train_dataloader = dict(sampler=dict(num_per_class=2))
optim_wrapper = dict(
    optimizer=dict(_delete_=True, type='SGD', lr=1e-3, momentum=0.9))
param_scheduler = [
    dict(type='StepLR', by_epoch=False, step_size=3000, gamma=0.1)
]
