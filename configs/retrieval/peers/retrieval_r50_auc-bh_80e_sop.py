# Batch: 128 images per process; lr 0.0001 is for a total batch of 128,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['../_base_/losses/auc-bh.py', '../_base_/datasets/sop.py']
train_dataloader = dict(
    sampler=dict(
        _delete_=True, type='PKSampler', batch_size=128, num_per_class=2),
    dataset=dict(pipeline={{_base_.auc_train_pipeline}}))
val_dataloader = dict(dataset=dict(pipeline={{_base_.auc_test_pipeline}}))
test_dataloader = val_dataloader
