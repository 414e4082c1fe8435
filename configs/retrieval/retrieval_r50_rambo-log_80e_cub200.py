# RaMBO recall loss, log weighting (Eq. 20), on CUB-200-2011 (Rolinek et al.,
# CVPR 2020, Sec. 5.1, Appendix A, Table 9: lr 5e-6, margin 0.02, lambda 0.2,
# memory 3). Paper numbers (Table 3), R@1/2/4/8: 63.5 / 74.8 / 84.1 / 90.4.
_base_ = [
    './_base_/models/retrieval_r50.py', './_base_/datasets/cub200.py',
    './_base_/schedules/adam_80e.py', './_base_/default_runtime.py'
]

model = dict(
    loss=dict(weighting='log', lambda_val=0.2, margin=0.02, memory=3))
optim_wrapper = dict(optimizer=dict(lr=5e-6))
# CUB is small: evaluate every 2 epochs to find the best R@1.
train_cfg = dict(val_interval=2)
default_hooks = dict(checkpoint=dict(interval=2))
