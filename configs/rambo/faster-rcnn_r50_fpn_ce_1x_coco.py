# Faster R-CNN R50-FPN with cross-entropy on COCO: MMDetection's own config
# (CocoMetric, 12 epochs, lr 0.02 for a total batch of 16 = 8 GPUs x 2), the
# baseline twin of `faster-rcnn_r50_fpn_rambo-bce_1x_coco.py`. The backbone
# loads `torchvision://resnet50` (a download on first use).
# Batch: 2 images per process; lr 0.02 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = 'mmdet::faster_rcnn/faster-rcnn_r50_fpn_1x_coco.py'

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)

# lr 0.02 is for a total batch of 16: on fewer devices MMEngine scales it
# linearly (one device, batch 2: 0.0025).
auto_scale_lr = dict(enable=True, base_batch_size=16)
