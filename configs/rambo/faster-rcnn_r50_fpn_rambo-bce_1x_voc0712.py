# Faster R-CNN R50-FPN on Pascal VOC07+12 trained with the two-stage recipe:
# the RaMBO AP loss (the paper's settings) plus a sigmoid cross-entropy on
# the same logits (`MixedRankLoss`, `../_base_/rambo-bce.py`), at the CE
# twin's learning rate (0.005 at batch 8), as in the DigitsVOC tests against
# cross-entropy (docs/evidence/pooled_mix_vs_ce.md). Not trained on
# VOC in this project (no VOC, no GPU on its machine): that gain is untested
# with an ImageNet-initialised backbone. Its scores are the cross-entropy's
# probabilities: a normal threshold works, no calibration needed.
# Batch: 8 images per process; lr 0.005 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./faster-rcnn_r50_fpn_ce_1x_voc0712.py', '../_base_/rambo-bce.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_bce_loss)))
