# aLRP Loss twin of `atss_r18-w32_fpn_focal_16e_digitsvoc.py`
# (`ALRPATSSHead`). Its lr and report were measured with a once-per-epoch
# self-balance update (the first inside the warm-up).
# Batch: 8 images per process; lr 0.0025 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./atss_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rank-sort.py']

model = dict(
    bbox_head=dict(_base_.alrp_dense_head, type='ALRPATSSHead'),
    test_cfg=_base_.rank_sort_test_cfg)
custom_hooks = _base_.alrp_hooks
# lr: selected on val (seed 5) by
# lab/rankloss_lab/studies/digitsvoc_dense_atss_rank_sort_16e.py; results:
# docs/evidence/digitsvoc_dense_atss_rank_sort_16e.md. The stability rule
# keeps it (the next larger lr did not collapse on that seed).
optim_wrapper = dict(optimizer=dict(lr=0.0025))
