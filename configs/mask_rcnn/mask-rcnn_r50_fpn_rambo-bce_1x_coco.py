# Mask R-CNN R50 FPN on COCO with the mix (`../_base_/rambo-bce.py`):
# MMDetection's `mask-rcnn_r50_fpn_1x_coco.py` with that loss_cls only. Its
# box twin is `../rambo/faster-rcnn_r50_fpn_rambo-bce_1x_coco.py`. Not
# trained: no COCO result was measured.
# Batch: 2 images per process; lr 0.02 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['mmdet::mask_rcnn/mask-rcnn_r50_fpn_1x_coco.py',
          '../_base_/rambo-bce.py']

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)

model = dict(
    roi_head=dict(bbox_head=dict(loss_cls=_base_.rambo_bce_loss)))

auto_scale_lr = dict(enable=True, base_batch_size=16)
