# RaMBO AP loss with the paper's settings (`../_base_/rambo.py`) on the
# glyph-pretrained backbone of the `_ce_12e_` twin.
# Calibrate before thresholding (fit_score_calibration.py --write-config).
# Batch: 8 images per process; lr 0.1 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['./faster-rcnn_r18-w32-glyphs_fpn_ce_12e_digitsvoc.py',
          '../_base_/rambo.py']

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_loss)),
    test_cfg=dict(rcnn=dict(score_thr=0.0)))
# lr: the paper's 0.1, also chosen on val by
# lab/rankloss_lab/studies/digitsvoc_pretrained_12e.py
optim_wrapper = dict(optimizer=dict(lr=0.1))
