# Batch: 128 images per process; lr 5e-06 is for a total batch of 128,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./_base_/losses/rambo-recall.py', './_base_/datasets/cub200.py']
model = dict(loss=dict(lambda_val=0.2, margin=0.02))
optim_wrapper = dict(optimizer=dict(lr=5e-6))
train_cfg = dict(val_interval=2)  # CUB is small: find the best R@1
default_hooks = dict(checkpoint=dict(interval=2))
