# scikit-learn's 8x8 digits (in the package, no download), zero-shot: train
# on 0-4, retrieve among 5-9 (its own gallery, self excluded). Upsampled to
# 36x36, 32x32 random / centre crops, as 256 -> 224 on the real datasets.
# The digits sets are the lab's (rankloss_lab.datasets), not the library's.
custom_imports = dict(
    imports=['mmdet_rankloss', 'rankloss_lab.datasets'],
    allow_failed_imports=False)
dataset_type = 'DigitsDataset'
train_batch_size = 60
train_pipeline = [
    dict(type='Resize', scale=(36, 36), keep_ratio=False),
    dict(type='RandomCrop', crop_size=(32, 32)),
    dict(type='PackRetrievalInputs')
]
test_pipeline = [
    dict(type='Resize', scale=(36, 36), keep_ratio=False),
    dict(type='CenterCrop', crop_size=32),
    dict(type='PackRetrievalInputs')
]
train_dataloader = dict(
    batch_size=train_batch_size, num_workers=0,
    sampler=dict(
        type='PKSampler', batch_size=train_batch_size, num_per_class=12),
    dataset=dict(type=dataset_type, split='train', pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=128, num_workers=0, drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(type=dataset_type, split='test', pipeline=test_pipeline))
test_dataloader = val_dataloader
val_evaluator = dict(type='RetrievalMetric', topk=(1, 2, 4, 8))
test_evaluator = val_evaluator

# The configs' lrs are for this total batch (one process): with more
# processes MMEngine scales them linearly to the total batch.
auto_scale_lr = dict(enable=True, base_batch_size=train_batch_size)
