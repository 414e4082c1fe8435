# The AUC paper's image pipelines (Gajic et al., Sec. 4.2), shared by the
# `*_auc-bh_*` configs, which read them as `_base_.auc_train_pipeline` and
# `_base_.auc_test_pipeline` (variables only: no key of the other bases).
# "We augment one of the two images per class in a mini-batch": the dataset
# marks each image's place in its class when the DataLoader fetches a whole
# batch (RetrievalDataset.__getitems__), and AugmentLaterViews augments the
# second image of each class only; the first is just resized. The paper gives
# no probabilities or strengths; those below are ours. Test images are resized
# to 224 x 224 too (the paper does not describe its test pipeline).
augment = [
    dict(type='YOLOXHSVRandomAug'),  # colour shift: hue, saturation, value
    dict(type='RandomZoom', scale_range=(0.8, 1.25), prob=0.5),
    dict(type='RandomFlip', prob=0.5, direction='horizontal'),
    dict(type='RandomMotionBlur', kernel_size=(3, 9), prob=0.5),
    dict(
        type='RandomApply',
        transforms=[
            # one hole, a quarter of each side, in the mean colour (BGR)
            dict(type='CutOut', n_holes=1, cutout_ratio=(0.25, 0.25),
                 fill_in=(104, 116, 124))
        ],
        prob=0.5)
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
