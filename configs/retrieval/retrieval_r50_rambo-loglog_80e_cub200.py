# RaMBO recall loss, log-log weighting (Eq. 20), on CUB-200-2011; otherwise as
# the log variant. Paper numbers (Table 3), R@1/2/4/8: 64.0 / 75.3 / 84.1 /
# 90.6.
_base_ = './retrieval_r50_rambo-log_80e_cub200.py'

model = dict(loss=dict(weighting='loglog'))
