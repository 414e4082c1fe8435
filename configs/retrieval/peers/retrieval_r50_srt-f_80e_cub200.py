_base_ = ['../_base_/losses/srt-f.py', '../_base_/datasets/cub200.py']
train_dataloader = dict(
    batch_size=72, sampler=dict(batch_size=72, num_per_class=4))
