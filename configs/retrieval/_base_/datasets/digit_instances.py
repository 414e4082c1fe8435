# Digit instances (the SOP protocol on scikit-learn's digits, no download;
# docs/retrieval.md): 997 training, 300 val and 500 test instances, each
# image a class. Views are drawn by RandomDigitScene (flat background,
# lighter stroke), new on every call in training, 4 fixed per val / test
# instance. Batches of 30 instances x 2 views. The dataset is the lab's
# (rankloss_lab.datasets), not the library's.
custom_imports = dict(
    imports=['mmdet_rankloss', 'rankloss_lab.datasets'],
    allow_failed_imports=False)
dataset_type = 'DigitInstancesDataset'
train_batch_size = 60
scene = dict(
    type='RandomDigitScene', canvas_size=32, scale_range=(16, 24),
    max_rotation=10.0, texture=0.0, polarity='light')
train_pipeline = [scene, dict(type='PackRetrievalInputs')]
test_pipeline = [dict(scene, seed=0), dict(type='PackRetrievalInputs')]
train_dataloader = dict(
    batch_size=train_batch_size, num_workers=0,
    sampler=dict(
        type='PKSampler', batch_size=train_batch_size, num_per_class=2),
    dataset=dict(type=dataset_type, split='train', pipeline=train_pipeline))
val_dataloader = dict(
    batch_size=128, num_workers=0, drop_last=False,
    sampler=dict(type='DefaultSampler', shuffle=False),
    dataset=dict(type=dataset_type, split='val', pipeline=test_pipeline))
test_dataloader = dict(
    val_dataloader,
    dataset=dict(type=dataset_type, split='test', pipeline=test_pipeline))
val_evaluator = dict(type='RetrievalMetric', topk=(1, 2, 4, 8))
test_evaluator = val_evaluator
auto_scale_lr = dict(enable=True, base_batch_size=train_batch_size)
