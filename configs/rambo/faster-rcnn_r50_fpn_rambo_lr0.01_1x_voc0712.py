# `faster-rcnn_r50_fpn_rambo_1x_voc0712.py` at lr 0.01, twice the CE twin's,
# instead of the paper's 0.1: RaMBO's best rate on DigitsVOC val when
# fine-tuning a trained detector, the protocol closest to an
# ImageNet-initialised VOC run (docs/evidence/digitsvoc_finetune_4e.md).
# Untested on VOC: not trained in this project.
# Calibrate before thresholding (fit_score_calibration.py --write-config).
# Batch: 8 images per process; lr 0.01 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = './faster-rcnn_r50_fpn_rambo_1x_voc0712.py'

optim_wrapper = dict(optimizer=dict(lr=0.01))
