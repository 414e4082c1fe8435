# FastAP (Cakir et al., CVPR 2019) on CUB-200-2011. The paper reports no CUB
# result; its recipe: ResNet-50, 512-d embedding, Adam lr 1e-5 without weight
# decay, 10x lr on the embedding layer, 10 histogram bins, M = 96 (the largest
# ResNet-50 batch of the paper without the large-batch heuristic), 24 classes x
# 4 images per batch.
_base_ = [
    '../_base_/models/retrieval_r50.py', '../_base_/datasets/cub200.py',
    '../_base_/schedules/adam_80e.py', '../_base_/default_runtime.py'
]

model = dict(loss=dict(_delete_=True, type='FastAPLoss', num_bins=10))
train_dataloader = dict(
    batch_size=96, sampler=dict(batch_size=96, num_per_class=4))
optim_wrapper = dict(optimizer=dict(lr=1e-5, weight_decay=0.0))
