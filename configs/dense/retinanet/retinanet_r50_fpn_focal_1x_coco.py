# RetinaNet R50 FPN with focal loss on COCO (MMDetection's own config,
# CocoMetric): the baseline twin of `retinanet_r50_fpn_rambo_1x_coco.py`.
_base_ = 'mmdet::retinanet/retinanet_r50_fpn_1x_coco.py'

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)
