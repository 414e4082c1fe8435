_base_ = ['./_base_/losses/rambo-recall.py', './_base_/datasets/inshop.py']
model = dict(loss=dict(lambda_val=0.2, margin=0.05))
optim_wrapper = dict(optimizer=dict(lr=1e-5))
