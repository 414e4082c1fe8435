# Soft Ranking Threshold loss, full version SRT-F (Yang et al., ICIP 2020):
# soft margin (Eq. 8) plus the hard-threshold term (Eq. 6, beta = 0.01) after a
# warm-up, on the paper's backbone recipe (Sec. 3.3, after Hermans et al.):
# ResNet-50 with global max pooling, a 128-d embedding, batches of P x K = 18 x
# 4 = 72 (18 items x 4 images, from pairs of categories). The paper's extra
# 1024-d fully connected layer before the 128-d one is not an option of
# RetrievalModel (one linear layer); Adam lr 3e-4 is Hermans et al.'s (the SRT
# paper gives none). Paper numbers exist only for person re-identification and
# DeepFashion In-Shop (mAP / CMC@1 71.2 / 86.5 with bounding boxes, Table 2).
_base_ = [
    '../_base_/models/retrieval_r50.py', '../_base_/datasets/inshop.py',
    '../_base_/schedules/adam_80e.py', '../_base_/default_runtime.py'
]

model = dict(
    pooling='max',
    hidden_dims=(1024, ),
    embed_dim=128,
    loss=dict(
        _delete_=True,
        type='SoftRankThresholdLoss',
        alpha=0.5,
        soft_margin=True,
        hard_weight=0.01,
        hard_warmup_iters=1000,
        temperature=0.1))
train_dataloader = dict(
    batch_size=72, sampler=dict(batch_size=72, num_per_class=4))
optim_wrapper = dict(optimizer=dict(lr=3e-4))
