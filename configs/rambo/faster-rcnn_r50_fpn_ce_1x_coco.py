# Faster R-CNN R50-FPN with cross-entropy on COCO: MMDetection's own config
# (CocoMetric, 12 epochs), the baseline of the COCO twins here.
# Batch: 2 images per process; lr 0.02 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = 'mmdet::faster_rcnn/faster-rcnn_r50_fpn_1x_coco.py'

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)

auto_scale_lr = dict(enable=True, base_batch_size=16)
