# SoDeep rank-triplet loss, hard negatives, several positives (Engilberge et
# al., CVPR 2019, Eq. 9-10). No CUB / SOP / In-Shop recipe in the paper, so
# the RaMBO configs' (configs set its lr). Rows of the 127 other batch items,
# ranked by the handcrafted sorter (Eq. 11-12, lambda 10, no training);
# pad_value lets smaller batches through. Learned sorters: docs/losses.md.
_base_ = ['../models/retrieval_r50.py', '../schedules/adam_80e.py',
          '../default_runtime.py']
model = dict(
    loss=dict(
        type='SoDeepRecallLoss',
        sorter=dict(type='HandcraftedSorter', seq_len=127, lambda_val=10.0),
        pad_value=-2.0,
        margin=1.0))
