# RaMBO recall loss, log-log weighting (Eq. 20), on In-Shop Clothes; otherwise
# as the log variant. Paper numbers (Table 4), R@1/10/20/30/50:
# 86.3 / 96.2 / 97.4 / 97.9 / 98.5.
_base_ = './retrieval_r50_rambo-log_80e_inshop.py'

model = dict(loss=dict(weighting='loglog'))
