# RaMBO + focal twin of `retinanet_r18-w32_fpn_focal_16e_digitsvoc.py`: the
# stock RetinaHead trained with the RaMBO AP loss over all anchors plus the
# stock focal loss (`MixedRankLoss` of `../_base_/rambo-ap.py`); the detector
# predicts with the stock sigmoid and score threshold, which the focal term
# keeps meaningful.
_base_ = [
    './retinanet_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rambo-ap.py'
]

model = dict(
    bbox_head=dict(
        type='RaMBORetinaHead', loss_cls=_base_.rambo_focal_dense_loss))
