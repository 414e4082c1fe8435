# Batch-hard triplet loss, margin 0.3: the AUC paper's baseline (Sec. 4.3.4)
# with its recipe (Sec. 4.2), as `auc-bh.py` without the orthogonal
# embedding initialisation and the augmentations. Configs set 64 classes x 2
# images, CUB's the small-dataset schedule.
_base_ = ['../models/retrieval_r50.py', '../schedules/adam_80e.py',
          '../default_runtime.py']
model = dict(
    pooling='max', loss=dict(type='BatchHardTripletLoss', margin=0.3))
optim_wrapper = dict(optimizer=dict(lr=1e-4))
param_scheduler = [
    dict(type='StepLR', by_epoch=False, step_size=10000, gamma=0.9)
]
