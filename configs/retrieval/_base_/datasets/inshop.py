# In-Shop Clothes: queries retrieve from a separate gallery (the 'test' split
# holds both, flagged is_query); 4 consecutive batches per pair of
# categories, 16 items x 8 images each (RaMBO Appendix A, after FastAP).
# Otherwise as CUB-200-2011.
_base_ = './cub200.py'
dataset_type = 'InShopDataset'
data_root = 'data/inshop/'
train_dataloader = dict(
    sampler=dict(
        type='SuperClassPairSampler', num_per_class=8, batches_per_pair=4),
    dataset=dict(type=dataset_type, data_root=data_root))
val_dataloader = dict(dataset=dict(type=dataset_type, data_root=data_root))
test_dataloader = val_dataloader
val_evaluator = dict(topk=(1, 10, 20, 30, 40, 50))
test_evaluator = val_evaluator
