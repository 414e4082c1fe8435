_base_ = ['../_base_/losses/srt-f.py', '../_base_/datasets/cub200.py']
train_dataloader = dict(
    batch_size=72, sampler=dict(batch_size=72, num_per_class=4))
# the lr is for this batch (one process)
auto_scale_lr = dict(base_batch_size=72)
