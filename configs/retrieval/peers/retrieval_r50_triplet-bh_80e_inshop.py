# Batch-hard triplet loss, margin 0.3: the AUC paper's baseline (Sec. 4.3.4),
# with the AUC paper's recipe (Sec. 4.2): ResNet-50, global max pooling, 512-d
# embedding, batches of 64 classes x 2 images, Adam lr 1e-4, x 0.9 every 10,000
# steps. Not reproduced: the orthogonal initialisation of the embedding layer
# and the augmentations (cutout, zoom, colour shift, motion blur) of one image
# per class. Paper numbers (Table 4, 224 px): R@1/10 89.81 / 97.24.
_base_ = [
    '../_base_/models/retrieval_r50.py', '../_base_/datasets/inshop.py',
    '../_base_/schedules/adam_80e.py', '../_base_/default_runtime.py'
]

model = dict(
    pooling='max',
    loss=dict(_delete_=True, type='BatchHardTripletLoss', margin=0.3))
train_dataloader = dict(
    batch_size=128,
    sampler=dict(_delete_=True, type='PKSampler', batch_size=128,
                 num_per_class=2))
optim_wrapper = dict(optimizer=dict(lr=1e-4))  # weight decay: the base's 4e-4
param_scheduler = [
    dict(type='StepLR', by_epoch=False, step_size=10000, gamma=0.9)
]
