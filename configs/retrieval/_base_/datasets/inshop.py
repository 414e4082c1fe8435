# In-Shop Clothes Retrieval: list_eval_partition.txt, train 25,882 images;
# queries (14,218) retrieve from a separate gallery (12,612), so evaluation
# uses the 'test' split (query + gallery, each sample flagged is_query).
# Batches: 4 consecutive batches per pair of categories, 16 items x 8 images
# each (RaMBO Appendix A, after FastAP).
dataset_type = 'InShopDataset'
data_root = 'data/inshop/'
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
        num_per_class=8,
        batches_per_pair=4),
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

val_evaluator = dict(type='RetrievalMetric', topk=(1, 10, 20, 30, 40, 50))
test_evaluator = val_evaluator
