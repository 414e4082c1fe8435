# RS-Mask R-CNN twin of `mask-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py`, as in
# the authors' code (`_base_/rank-sort-mask.py`), with no score threshold.
# Batch: 8 images per process; lr 0.02 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./_base_/mask-rcnn_r18-w32_fpn_16e_digitsvoc.py',
          './_base_/rank-sort-mask.py']

model = dict(
    _base_.rank_sort_mask_rcnn, test_cfg=dict(rcnn=_base_.rank_sort_test_cfg))
optim_wrapper = dict(optimizer=dict(lr=0.02))
