_base_ = ['../_base_/losses/sodeep-recall.py', '../_base_/datasets/cub200.py']
optim_wrapper = dict(optimizer=dict(lr=5e-6))
