# The scene demo, `python tools/retrieval_quickstart.py --scene`: the digits
# config with each digit drawn on a random 32 x 32 RGB scene
# (RandomDigitScene: size, rotation, position, textured background, stroke
# colour and polarity), so raw pixels do not retrieve it (unseen digits
# 5-9; test scenes fixed per image, new training scenes every epoch). It does
# not learn yet (R@1 at the untrained network's level; docs/retrieval.md has
# the diagnosis), so it is not the quickstart's default.
# Batch: 60 images per process; lr 0.001 is for a total batch of 60,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = [
    './_base_/models/retrieval_r18-w16_digits.py',
    './_base_/datasets/digits.py', './_base_/schedules/adam_10e_digits.py',
    './_base_/default_runtime.py'
]
model = dict(
    data_preprocessor=dict(mean=[127.5] * 3, std=[127.5] * 3),
    backbone=dict(in_channels=3),
    loss=dict(type='RaMBORecallLoss', weighting='log', lambda_val=0.2,
              margin=0.02, memory=3))
scene = dict(type='RandomDigitScene', canvas_size=32, scale_range=(14, 28))
train_pipeline = [
    scene,
    dict(type='PackRetrievalInputs')
]
test_pipeline = [
    dict(**scene, seed=0),
    dict(type='PackRetrievalInputs')
]
train_dataloader = dict(dataset=dict(pipeline=train_pipeline))
val_dataloader = dict(dataset=dict(pipeline=test_pipeline))
test_dataloader = val_dataloader
default_hooks = dict(logger=dict(interval=5), checkpoint=dict(interval=2))
randomness = dict(seed=0)

# Exact --resume: the loss's score memory and the random state go into every
# checkpoint and come back on resume (docs/reliability.md).
custom_hooks = [dict(type='RankLossMemoryHook'), dict(type='RandomStateHook')]
