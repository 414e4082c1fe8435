# RaMBO AP loss twin of `retinanet_r50_fpn_focal_1x_voc0712.py`: the stock
# RetinaHead with the RaMBO loss of `../_base_/rambo-ap.py` as its
# classification loss (`RaMBORetinaHead`), at focal's lr.
_base_ = ['./retinanet_r50_fpn_focal_1x_voc0712.py', '../_base_/rambo-ap.py']

model = dict(
    bbox_head=dict(type='RaMBORetinaHead', loss_cls=_base_.rambo_dense_loss),
    test_cfg=dict(score_thr=0.0))
