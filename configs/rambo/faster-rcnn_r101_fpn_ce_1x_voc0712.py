# Faster R-CNN R101-FPN, cross-entropy, VOC07+12 (RaMBO paper, Table 5: 82.4
# AP50 paper number).
# Batch: 8 images per process; lr 0.005 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = './faster-rcnn_r50_fpn_ce_1x_voc0712.py'

model = dict(
    backbone=dict(
        depth=101,
        init_cfg=dict(
            type='Pretrained', checkpoint='torchvision://resnet101')))
