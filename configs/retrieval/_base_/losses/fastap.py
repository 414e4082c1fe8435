# FastAP (Cakir et al., CVPR 2019) with its recipe: 10 histogram bins, Adam lr
# 1e-5 without weight decay, 10x lr on the embedding layer. Configs set the
# batch: M = 96 (its largest ResNet-50 batch without the large-batch
# heuristic) or M = 256 embedded 96 at a time (Sec. 4.1; needs frozen BN).
_base_ = ['../models/retrieval_r50.py', '../schedules/adam_80e.py',
          '../default_runtime.py']
model = dict(loss=dict(type='FastAPLoss', num_bins=10))
optim_wrapper = dict(optimizer=dict(lr=1e-5, weight_decay=0.0))
