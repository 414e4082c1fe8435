# Retrieval quickstart, `python tools/retrieval_quickstart.py` (under a
# minute on 2 CPU cores): the RaMBO recall loss with Table 9's CUB values
# trains a small ResNet-18 from scratch on digits 0-4; Recall@K on 5-9.
# Batch: 60 images per process; lr 0.001 is for a total batch of 60,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './_base_/models/retrieval_r18-w16_digits.py',
    './_base_/datasets/digits.py', './_base_/schedules/adam_10e_digits.py',
    './_base_/default_runtime.py'
]
model = dict(
    loss=dict(type='RaMBORecallLoss', weighting='log', lambda_val=0.2,
              margin=0.02, memory=3))
default_hooks = dict(logger=dict(interval=5), checkpoint=dict(interval=2))
randomness = dict(seed=0)

# Exact --resume: the loss's score memory and the random state go into every
# checkpoint and come back on resume (docs/reliability.md).
custom_hooks = [dict(type='RankLossMemoryHook'), dict(type='RandomStateHook')]
