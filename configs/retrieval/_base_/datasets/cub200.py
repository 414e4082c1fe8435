# CUB-200-2011, zero-shot: classes 1-100 train, 101-200 test (its own gallery,
# self excluded). Resize to 256, random 224 crop and flip / centre crop;
# batches of 32 classes x 4 images (RaMBO Appendix A). Base of sop, inshop.
custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)
dataset_type = 'CUB200Dataset'
data_root = 'data/CUB_200_2011/'
train_batch_size = 128
train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(256, 256), keep_ratio=False),
    dict(type='RandomCrop', crop_size=(224, 224)),
    dict(type='RandomFlip', prob=0.5),
    dict(type='PackRetrievalInputs')
]
test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(256, 256), keep_ratio=False),
    dict(type='CenterCrop', crop_size=224),
    dict(type='PackRetrievalInputs')
]
train_dataloader = dict(
    batch_size=train_batch_size, num_workers=4, persistent_workers=True,
    sampler=dict(
        type='PKSampler', batch_size=train_batch_size, num_per_class=4),
    dataset=dict(type=dataset_type, data_root=data_root, split='train',
                 pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=64, num_workers=4, persistent_workers=True, drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(type=dataset_type, data_root=data_root, split='test',
                 pipeline=test_pipeline))
test_dataloader = val_dataloader
val_evaluator = dict(type='RetrievalMetric', topk=(1, 2, 4, 8))
test_evaluator = val_evaluator
auto_scale_lr = dict(enable=True, base_batch_size=train_batch_size)
