_base_ = ['../_base_/losses/fastap.py', '../_base_/datasets/cub200.py']
train_dataloader = dict(batch_size=96, sampler=dict(batch_size=96))
# the lr is for this batch (one process)
auto_scale_lr = dict(base_batch_size=96)
