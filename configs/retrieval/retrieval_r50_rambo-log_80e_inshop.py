# RaMBO recall loss, log weighting (Eq. 20), on In-Shop Clothes (Rolinek et
# al., CVPR 2020, Sec. 5.1, Appendix A, Table 9: lr 1e-5, margin 0.05,
# lambda 0.2, memory 3). Paper numbers (Table 4), R@1/10/20/30/50:
# 88.1 / 97.0 / 97.9 / 98.4 / 98.8.
_base_ = [
    './_base_/models/retrieval_r50.py', './_base_/datasets/inshop.py',
    './_base_/schedules/adam_80e.py', './_base_/default_runtime.py'
]

model = dict(loss=dict(weighting='log', lambda_val=0.2, margin=0.05, memory=3))
optim_wrapper = dict(optimizer=dict(lr=1e-5))
