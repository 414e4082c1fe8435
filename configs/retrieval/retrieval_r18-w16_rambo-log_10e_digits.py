# Retrieval quickstart: the RaMBO recall loss (log weighting, Table 9's CUB
# lambda 0.2 and margin 0.02, memory 3) trains a small ResNet-18 from scratch
# on scikit-learn's digits 0-4 and is evaluated by Recall@K on the unseen
# digits 5-9. Under a minute on 2 CPU cores:
#   python tools/retrieval_quickstart.py
_base_ = [
    './_base_/models/retrieval_r18-w16_digits.py',
    './_base_/datasets/digits.py', './_base_/schedules/adam_10e_digits.py',
    './_base_/default_runtime.py'
]

default_hooks = dict(logger=dict(interval=5), checkpoint=dict(interval=2))
randomness = dict(seed=0)
