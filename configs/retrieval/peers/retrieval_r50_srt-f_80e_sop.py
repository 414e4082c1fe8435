# Batch: 72 images per process; lr 0.0003 is for a total batch of 72,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['../_base_/losses/srt-f.py', '../_base_/datasets/sop.py']
train_dataloader = dict(
    batch_size=72, sampler=dict(batch_size=72, num_per_class=4))
auto_scale_lr = dict(base_batch_size=72)
