# Stanford Online Products, Ebay_train / Ebay_test (its own gallery, self
# excluded); 10 consecutive batches per pair of super-classes, 32 classes x 4
# images each (RaMBO Appendix A, after FastAP). Otherwise as CUB-200-2011.
_base_ = './cub200.py'
dataset_type = 'SOPDataset'
data_root = 'data/Stanford_Online_Products/'
train_dataloader = dict(
    sampler=dict(type='SuperClassPairSampler', batches_per_pair=10),
    dataset=dict(type=dataset_type, data_root=data_root))
val_dataloader = dict(dataset=dict(type=dataset_type, data_root=data_root))
test_dataloader = val_dataloader
val_evaluator = dict(topk=(1, 10, 100, 1000))
test_evaluator = val_evaluator
