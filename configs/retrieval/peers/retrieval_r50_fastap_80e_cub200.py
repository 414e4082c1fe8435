_base_ = ['../_base_/losses/fastap.py', '../_base_/datasets/cub200.py']
train_dataloader = dict(batch_size=96, sampler=dict(batch_size=96))
