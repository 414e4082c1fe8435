# RS-Mask R-CNN R18-w32 FPN from scratch on DigitsVOC with instance masks,
# as in the authors' code (`_base_/rank-sort-mask.py`). Ranking-trained
# scores have no absolute scale: tested at score threshold 0, as the Faster
# R-CNN RS twin.
# lr: selected on val (box, mean of seeds 5 and 11) by
# lab/rankloss_lab/studies/digitsvoc_mask_rcnn_16e.py from {0.01, 0.02, 0.04};
# results: docs/evidence/digitsvoc_mask_rcnn_16e.md.
# Batch: 8 images per process; lr 0.02 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./_base_/mask-rcnn_r18-w32_fpn_16e_digitsvoc.py',
          './_base_/rank-sort-mask.py']

model = dict(
    _base_.rank_sort_mask_rcnn, test_cfg=dict(rcnn=_base_.rank_sort_test_cfg))
optim_wrapper = dict(optimizer=dict(lr=0.02))
