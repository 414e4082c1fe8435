# Digit instances (SOP protocol on scikit-learn's digits, no download): each
# of the 1,797 images is a class; training instances (997) are disjoint from
# the val (300, for choosing hyper-parameters) and test (500) instances. A
# view is the digit drawn by RandomDigitScene on a 32 x 32 RGB canvas: random
# size, rotation, position, flat background and lighter stroke colour.
# Training views are new on every call; val and test views are fixed (4 per
# instance), and each is a query for the other 3 views of its instance among
# all the split's. Batches of 30 instances x 2 views. The loaders and the
# metric are the digits quickstart's.
_base_ = './digits.py'
dataset_type = 'DigitInstancesDataset'
scene = dict(
    type='RandomDigitScene', canvas_size=32, scale_range=(16, 24),
    max_rotation=10.0, texture=0.0, polarity='light')
train_pipeline = [scene, dict(type='PackRetrievalInputs')]
test_pipeline = [dict(scene, seed=0), dict(type='PackRetrievalInputs')]
train_dataloader = dict(
    sampler=dict(num_per_class=2),
    dataset=dict(type=dataset_type, pipeline=train_pipeline))
val_dataloader = dict(
    dataset=dict(type=dataset_type, split='val', pipeline=test_pipeline))
test_dataloader = dict(
    dataset=dict(type=dataset_type, split='test', pipeline=test_pipeline))
