_base_ = ['../_base_/losses/auc-bh.py', '../_base_/datasets/sop.py']
train_dataloader = dict(
    sampler=dict(
        _delete_=True, type='PKSampler', batch_size=128, num_per_class=2),
    dataset=dict(pipeline={{_base_.auc_train_pipeline}}))
val_dataloader = dict(dataset=dict(pipeline={{_base_.auc_test_pipeline}}))
test_dataloader = val_dataloader
