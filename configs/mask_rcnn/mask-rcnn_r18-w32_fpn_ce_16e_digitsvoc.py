# Mask R-CNN R18-w32 FPN from scratch on DigitsVOC with instance masks,
# cross-entropy: the recipe of `_base_/mask-rcnn_r18-w32_fpn_16e_digitsvoc.py`.
# lr (as its twins'): selected on val (box, mean of seeds 5 and 11) by
# lab/rankloss_lab/studies/digitsvoc_mask_rcnn_16e.py; results:
# docs/evidence/digitsvoc_mask_rcnn_16e.md.
# Batch: 8 images per process; lr 0.04 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = './_base_/mask-rcnn_r18-w32_fpn_16e_digitsvoc.py'
