# Batch: 256 images per process; lr 1e-05 is for a total batch of 256,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['../_base_/losses/fastap.py', '../_base_/datasets/inshop.py']
model = dict(type='LargeBatchRetrievalModel', chunk_size=96)
train_dataloader = dict(batch_size=256, sampler=dict(batch_size=256))
auto_scale_lr = dict(base_batch_size=256)
