# FastAP (Cakir et al., CVPR 2019) on In-Shop Clothes: ResNet-50, 512-d
# embedding, Adam lr 1e-5 without weight decay, 10x lr on the embedding layer,
# 10 histogram bins, category-based batches (4 consecutive batches per pair of
# categories, 8 images per item) of M = 256 images, embedded 96 at a time by
# the large-batch heuristic of Sec. 4.1 (LargeBatchRetrievalModel; needs frozen
# BatchNorm, as here). Paper numbers, ResNet-50, M = 256: R@1/10/20/30/40/50
# 90.9 / 97.7 / 98.5 / 98.8 / 98.9 / 99.1 (Table 2).
_base_ = [
    '../_base_/models/retrieval_r50.py', '../_base_/datasets/inshop.py',
    '../_base_/schedules/adam_80e.py', '../_base_/default_runtime.py'
]

model = dict(
    type='LargeBatchRetrievalModel',
    chunk_size=96,
    loss=dict(_delete_=True, type='FastAPLoss', num_bins=10))
train_dataloader = dict(batch_size=256, sampler=dict(batch_size=256))
optim_wrapper = dict(optimizer=dict(lr=1e-5, weight_decay=0.0))
