_base_ = ['../_base_/losses/sodeep-recall.py', '../_base_/datasets/sop.py']
optim_wrapper = dict(optimizer=dict(lr=3e-6))
