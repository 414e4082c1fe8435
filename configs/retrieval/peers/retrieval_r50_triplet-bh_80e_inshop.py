_base_ = ['../_base_/losses/triplet-bh.py', '../_base_/datasets/inshop.py']
train_dataloader = dict(
    sampler=dict(
        _delete_=True, type='PKSampler', batch_size=128, num_per_class=2))
