# FastAP (Cakir et al., CVPR 2019) on Stanford Online Products: ResNet-50,
# 512-d embedding, Adam lr 1e-5 without weight decay, 10x lr on the embedding
# layer, 10 histogram bins, category-based batches (10 consecutive batches per
# pair of super-classes, 4 images per class) of M = 256 images, embedded 96 at
# a time by the large-batch heuristic of Sec. 4.1 (LargeBatchRetrievalModel;
# needs frozen BatchNorm, as here). Paper numbers, ResNet-50, M = 256:
# R@1/10/100/1000 76.4 / 89.0 / 95.1 / 98.2 (Table 1).
_base_ = [
    '../_base_/models/retrieval_r50.py', '../_base_/datasets/sop.py',
    '../_base_/schedules/adam_80e.py', '../_base_/default_runtime.py'
]

model = dict(
    type='LargeBatchRetrievalModel',
    chunk_size=96,
    loss=dict(_delete_=True, type='FastAPLoss', num_bins=10))
train_dataloader = dict(batch_size=256, sampler=dict(batch_size=256))
optim_wrapper = dict(optimizer=dict(lr=1e-5, weight_decay=0.0))
