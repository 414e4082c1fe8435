# RaMBO + focal twin of `retinanet_r50_fpn_focal_1x_voc0712.py`: the stock
# RetinaHead (box loss unchanged) trained with the RaMBO AP loss over all
# anchors, ranking the logits, plus the stock focal loss (`MixedRankLoss`,
# `rambo_focal_dense_loss` of `../_base_/rambo-ap.py`), at focal's lr (0.01
# for a total batch of 16). The evidence for this mix is ATSS's (DigitsVOC,
# ahead of focal: docs/evidence/digitsvoc_dense_atss_16e.md, docs/dense.md);
# on the
# DigitsVOC RetinaNet, whose focal baseline is itself unstable without
# normalisation in the head, RaMBO + focal and focal were level (no
# difference resolved). Not trained at this scale in this project (no VOC,
# no GPU on its machine). Scores keep focal's threshold: the focal term keeps
# them probabilities.
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./retinanet_r50_fpn_focal_1x_voc0712.py', '../_base_/rambo-ap.py']

model = dict(
    bbox_head=dict(
        type='RaMBORetinaHead', loss_cls=_base_.rambo_focal_dense_loss))
