# RaMBO recall loss, log-log weighting (Eq. 20), on Stanford Online Products;
# otherwise as the log variant. Paper numbers (Table 2), R@1/10/100/1000:
# 78.6 / 90.5 / 96.0 / 98.7.
_base_ = './retrieval_r50_rambo-log_80e_sop.py'

model = dict(loss=dict(weighting='loglog'))
