# For the 32x32 grayscale digits: ResNet-18 at 16 base channels, from scratch,
# BatchNorm trained, 128 channels pooled into a 64-d embedding. No loss.
_base_ = './retrieval_r50.py'
model = dict(
    data_preprocessor=dict(
        _delete_=True, type='ImgDataPreprocessor', mean=[127.5],
        std=[127.5]),
    backbone=dict(
        depth=18, in_channels=1, base_channels=16, norm_eval=False,
        init_cfg=None),
    in_channels=128,
    embed_dim=64)
