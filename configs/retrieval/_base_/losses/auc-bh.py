# AUC loss, batch hard (Gajic et al., Eq. 9), delta_s 0.05 (r = 42.14, Eq.
# 10), with the paper's recipe (Sec. 4.2): max pooling, orthogonally
# initialised embedding, Adam lr 1e-4 x 0.9 every 10,000 steps (weight decay
# the schedule's 4e-4). Configs set 64 classes x 2 images and the pipelines,
# CUB's the paper's small-dataset schedule.
_base_ = ['../models/retrieval_r50.py', '../schedules/adam_80e.py',
          '../default_runtime.py', '../datasets/auc_pipelines.py']
model = dict(
    pooling='max',
    init_cfg=dict(type='Orthogonal', override=dict(name='embedding')),
    loss=dict(type='AUCLoss', strategy='hard', delta_s=0.05))
optim_wrapper = dict(optimizer=dict(lr=1e-4))
param_scheduler = [
    dict(type='StepLR', by_epoch=False, step_size=10000, gamma=0.9)
]
