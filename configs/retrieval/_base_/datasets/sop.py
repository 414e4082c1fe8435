# Stanford Online Products: Ebay_train.txt (59,551 images, 11,318 classes) /
# Ebay_test.txt (60,502 images, 11,316 classes), the test set is its own
# gallery (self excluded). Batches: 10 consecutive batches per pair of
# super-classes, 32 classes x 4 images each (RaMBO Appendix A, after FastAP).
dataset_type = 'SOPDataset'
data_root = 'data/Stanford_Online_Products/'
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
    batch_size=train_batch_size,
    num_workers=4,
    persistent_workers=True,
    sampler=dict(
        type='SuperClassPairSampler',
        batch_size=train_batch_size,
        num_per_class=4,
        batches_per_pair=10),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        split='train',
        pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=64,
    num_workers=4,
    persistent_workers=True,
    drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(
        type=dataset_type,
        data_root=data_root,
        split='test',
        pipeline=test_pipeline))
test_dataloader = val_dataloader

val_evaluator = dict(type='RetrievalMetric', topk=(1, 10, 100, 1000))
test_evaluator = val_evaluator
