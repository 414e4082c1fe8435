# Batch: 128 images per process; lr 3e-06 is for a total batch of 128,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./_base_/losses/rambo-recall.py', './_base_/datasets/sop.py']
model = dict(loss=dict(lambda_val=4.0, margin=0.02))
optim_wrapper = dict(optimizer=dict(lr=3e-6))
