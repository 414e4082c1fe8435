# Soft Ranking Threshold loss, full SRT-F (Yang et al., ICIP 2020): soft
# margin (Eq. 8) plus the hard-threshold term (Eq. 6, beta 0.01) after a
# warm-up. Backbone recipe of Sec. 3.3 (after Hermans et al.): max pooling,
# 1024-d hidden layer, 128-d embedding; Adam lr 3e-4 is Hermans et al.'s (the
# SRT paper gives none). Configs set batches of P x K = 18 x 4.
_base_ = ['../models/retrieval_r50.py', '../schedules/adam_80e.py',
          '../default_runtime.py']
model = dict(
    pooling='max',
    hidden_dims=(1024, ),
    embed_dim=128,
    loss=dict(
        type='SoftRankThresholdLoss', alpha=0.5, soft_margin=True,
        hard_weight=0.01, hard_warmup_iters=1000, temperature=0.1))
optim_wrapper = dict(optimizer=dict(lr=3e-4))
