# Mask R-CNN R18-w32 FPN from scratch on DigitsVOC with instance masks,
# cross-entropy (softmax box classifier, per-pixel sigmoid mask loss): the
# recipe of `_base_/mask-rcnn_r18-w32_fpn_16e_digitsvoc.py`, which the mix
# and RS configs share. Data: `tools/dataset_converters/make_digits_voc.py
# --masks` (the COCO twin under `data/digits_voc/VOCdevkit/annotations/`).
# lr: selected on val (box, mean of seeds 5 and 11) by
# lab/rankloss_lab/studies/digitsvoc_mask_rcnn_16e.py from {0.02, 0.04, 0.08};
# results: docs/evidence/digitsvoc_mask_rcnn_16e.md.
# Batch: 8 images per process; lr 0.04 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = './_base_/mask-rcnn_r18-w32_fpn_16e_digitsvoc.py'
