# The logits mix's own learning-rate grid. The shipped dense mix (RaMBO
# ranking the logits + focal) first ran at the sigmoid mix's selected lr
# (0.01, `lr_from='mix'` in digitsvoc_dense_atss_16e.py); here it gets its
# own grid, on val with the selection seed, as every other row did:
#   python tools/study.py lab/rankloss_lab/studies/digitsvoc_dense_atss_16e_mix_logits_lr.py \
#       --phase select --jobs 2
# Results: docs/evidence/digitsvoc_dense_atss_16e_mix_logits_lr.md.
_base_ = './digitsvoc_dense_atss_16e.py'
name = 'digitsvoc_dense_atss_16e_mix_logits_lr'
seeds = [0]  # selection only: its test seeds are in the ATSS study
baseline = 'mix_logits'
methods = dict(
    _delete_=True,
    mix_logits=dict(
        label='RaMBO (logits) + focal',
        config='configs/dense/atss/atss_r18-w32_fpn_rambo-focal_16e_digitsvoc.py',
        lrs=[0.005, 0.01, 0.02]))
