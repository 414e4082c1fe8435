# Batch: 128 images per process; lr 5e-06 is for a total batch of 128,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['../_base_/losses/sodeep-recall.py', '../_base_/datasets/cub200.py']
optim_wrapper = dict(optimizer=dict(lr=5e-6))
