_base_ = ['../_base_/losses/fastap.py', '../_base_/datasets/inshop.py']
model = dict(type='LargeBatchRetrievalModel', chunk_size=96)
train_dataloader = dict(batch_size=256, sampler=dict(batch_size=256))
# the lr is for this batch (one process)
auto_scale_lr = dict(base_batch_size=256)
