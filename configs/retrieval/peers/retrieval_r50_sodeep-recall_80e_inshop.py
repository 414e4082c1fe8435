# SoDeep rank-triplet loss with hard negatives (Engilberge et al., CVPR 2019,
# Eq. 9-10, several positives per query). SoDeep reports no CUB / SOP / In-Shop
# result, so the model, batches and schedule are those of the RaMBO configs
# (ResNet-50, 512-d, batches of 128, Adam lr 1e-5). Each query's row holds the
# 127 other batch items; the handcrafted sorter (Eq. 11-12, lambda 10) needs no
# training, and pad_value lets smaller batches through. For a learned sorter:
#   python tools/pretrain_sorter.py train --arch lstm --seq-len 127 \
#       --out work_dirs/sorters/lstm_d127.pth
# then set model.loss.checkpoint='work_dirs/sorters/lstm_d127.pth'.
_base_ = [
    '../_base_/models/retrieval_r50.py', '../_base_/datasets/inshop.py',
    '../_base_/schedules/adam_80e.py', '../_base_/default_runtime.py'
]

model = dict(
    loss=dict(
        _delete_=True,
        type='SoDeepRecallLoss',
        sorter=dict(type='HandcraftedSorter', seq_len=127, lambda_val=10.0),
        pad_value=-2.0,
        margin=1.0))
optim_wrapper = dict(optimizer=dict(lr=1e-5))
