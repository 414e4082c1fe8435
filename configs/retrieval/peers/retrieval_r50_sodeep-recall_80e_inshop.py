_base_ = ['../_base_/losses/sodeep-recall.py', '../_base_/datasets/inshop.py']
optim_wrapper = dict(optimizer=dict(lr=1e-5))
