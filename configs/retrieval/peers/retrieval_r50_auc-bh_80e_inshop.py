# AUC loss, batch hard (Gajic et al., Eq. 9), delta_s 0.05 (r = 42.14 by Eq.
# 10), with the AUC paper's recipe (Sec. 4.2): ResNet-50, global max pooling,
# 512-d orthogonally initialised embedding, batches of 64 classes x 2 images,
# Adam lr 1e-4, x 0.9 every 10,000 steps, images resized to 224 x 224 and one
# of the two images of each class augmented (flip, cutout, zoom in/out, colour
# shift, motion blur). Paper numbers (Table 4, 224 px): R@1/10 91.04 / 97.84.
_base_ = [
    '../_base_/models/retrieval_r50.py', '../_base_/datasets/inshop.py',
    '../_base_/schedules/adam_80e.py', '../_base_/default_runtime.py',
    '../_base_/datasets/auc_pipelines.py'
]

model = dict(
    pooling='max',
    init_cfg=dict(type='Orthogonal', override=dict(name='embedding')),
    loss=dict(_delete_=True, type='AUCLoss', strategy='hard', delta_s=0.05))

train_dataloader = dict(
    batch_size=128,
    sampler=dict(_delete_=True, type='PKSampler', batch_size=128,
                 num_per_class=2),
    dataset=dict(pipeline={{_base_.auc_train_pipeline}}))
val_dataloader = dict(dataset=dict(pipeline={{_base_.auc_test_pipeline}}))
test_dataloader = val_dataloader
optim_wrapper = dict(optimizer=dict(lr=1e-4))  # weight decay: the base's 4e-4
param_scheduler = [
    dict(type='StepLR', by_epoch=False, step_size=10000, gamma=0.9)
]
