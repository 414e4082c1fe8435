# The AUC paper's pipelines (Sec. 4.2; docs/losses.md), variables only: 224 x
# 224 (test images too: the paper gives no test pipeline); AugmentLaterViews
# augments the second image of each class in a batch only. Probabilities and
# strengths are ours (the paper gives none).
augment = [
    dict(type='YOLOXHSVRandomAug'),  # colour shift: hue, saturation, value
    dict(type='RandomZoom', scale_range=(0.8, 1.25), prob=0.5),
    dict(type='RandomFlip', prob=0.5, direction='horizontal'),
    dict(type='RandomMotionBlur', kernel_size=(3, 9), prob=0.5),
    # one hole, a quarter of each side, in the mean colour (BGR)
    dict(type='RandomApply', prob=0.5, transforms=[
        dict(type='CutOut', n_holes=1, cutout_ratio=(0.25, 0.25),
             fill_in=(104, 116, 124))
    ])
]
auc_train_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(224, 224), keep_ratio=False),
    dict(type='AugmentLaterViews', transforms=augment),
    dict(type='PackRetrievalInputs')
]
auc_test_pipeline = [
    dict(type='LoadImageFromFile'),
    dict(type='Resize', scale=(224, 224), keep_ratio=False),
    dict(type='PackRetrievalInputs')
]
