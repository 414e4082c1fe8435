# RaMBO AP loss twin of `retinanet_r18-w32_fpn_focal_16e_digitsvoc.py`: the
# stock RetinaHead with the RaMBO loss of `../_base_/rambo-ap.py` as its
# classification loss (`RaMBORetinaHead`). A batch of 8 images holds about
# 25k anchors per class.
_base_ = [
    './retinanet_r18-w32_fpn_focal_16e_digitsvoc.py', '../_base_/rambo-ap.py'
]

model = dict(
    bbox_head=dict(type='RaMBORetinaHead', loss_cls=_base_.rambo_dense_loss),
    test_cfg=dict(score_thr=0.0))
# lr: twice focal's, as RaMBO's best rate was 2-2.5x cross-entropy's in the
# two-stage DigitsVOC studies (docs/evidence.md); the dense study selects it
# on val.
optim_wrapper = dict(optimizer=dict(lr=0.02))
