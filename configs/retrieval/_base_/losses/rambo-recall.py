# RaMBO recall loss (Rolinek et al., CVPR 2020, Eq. 20) on the paper's model
# and schedule: log weighting, memory 3. Configs set lambda, margin, lr
# (Table 9) and, for log-log, the weighting.
_base_ = ['../models/retrieval_r50.py', '../schedules/adam_80e.py',
          '../default_runtime.py']
model = dict(loss=dict(type='RaMBORecallLoss', weighting='log', memory=3))

# Exact --resume (docs/reliability.md).
custom_hooks = [dict(type='RankLossMemoryHook'), dict(type='RandomStateHook')]
