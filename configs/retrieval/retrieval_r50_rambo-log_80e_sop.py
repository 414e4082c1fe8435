# RaMBO recall loss, log weighting (Eq. 20), on Stanford Online Products
# (Rolinek et al., CVPR 2020, Sec. 5.1, Appendix A, Table 9: lr 3e-6, margin
# 0.02, lambda 4, memory 3). Paper numbers (Table 2), R@1/10/100/1000:
# 77.8 / 90.1 / 95.9 / 98.7.
_base_ = [
    './_base_/models/retrieval_r50.py', './_base_/datasets/sop.py',
    './_base_/schedules/adam_80e.py', './_base_/default_runtime.py'
]

model = dict(loss=dict(weighting='log', lambda_val=4.0, margin=0.02, memory=3))
optim_wrapper = dict(optimizer=dict(lr=3e-6))
