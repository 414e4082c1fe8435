# Faster R-CNN R50-FPN on VOC07+12 with the two-stage recipe
# (`../_base_/rambo-bce.py`) at the CE twin's lr, as in the DigitsVOC tests
# (docs/evidence/pooled_mix_vs_ce.md). Not trained on VOC in this project:
# that gain is untested with an ImageNet-initialised backbone.
# Batch: 8 images per process; lr 0.005 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./faster-rcnn_r50_fpn_ce_1x_voc0712.py', '../_base_/rambo-bce.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_bce_loss)))
