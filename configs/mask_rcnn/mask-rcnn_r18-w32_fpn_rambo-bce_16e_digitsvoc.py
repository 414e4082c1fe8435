# Mask R-CNN R18-w32 FPN from scratch on DigitsVOC with instance masks, the
# mix (`MixedRankLoss`: RaMBO AP loss + per-class sigmoid cross-entropy on
# the same box-classifier logits, `../_base_/rambo-bce.py`); the mask branch
# is the CE twin's. Scores are the sigmoid cross-entropy's probabilities, so
# the CE twin's score threshold (0.05) stays.
# lr: selected on val (box, mean of seeds 5 and 11) by
# lab/rankloss_lab/studies/digitsvoc_mask_rcnn_16e.py from {0.02, 0.04, 0.08};
# results: docs/evidence/digitsvoc_mask_rcnn_16e.md.
# Batch: 8 images per process; lr 0.04 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./_base_/mask-rcnn_r18-w32_fpn_16e_digitsvoc.py',
          '../_base_/rambo-bce.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_bce_loss)))
optim_wrapper = dict(optimizer=dict(lr=0.04))
