# Batch: 128 images per process; lr 1e-05 is for a total batch of 128,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./_base_/losses/rambo-recall.py', './_base_/datasets/inshop.py']
model = dict(loss=dict(lambda_val=0.2, margin=0.05))
optim_wrapper = dict(optimizer=dict(lr=1e-5))
