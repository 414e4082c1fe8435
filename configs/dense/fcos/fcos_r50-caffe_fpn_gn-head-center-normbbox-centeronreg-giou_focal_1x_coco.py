# FCOS R50 (caffe) FPN with focal loss on COCO: MMDetection's improved FCOS
# (CocoMetric), the baseline of the twins beside it.
# Batch: 2 images per process; lr 0.01 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = 'mmdet::fcos/fcos_r50-caffe_fpn_gn-head-center-normbbox-centeronreg-giou_1x_coco.py'

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)

auto_scale_lr = dict(enable=True, base_batch_size=16)
