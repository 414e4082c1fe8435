# ATSS R50 FPN with focal loss on COCO (MMDetection's own config, CocoMetric):
# the baseline twin of `atss_r50_fpn_rambo_1x_coco.py`.
_base_ = 'mmdet::atss/atss_r50_fpn_1x_coco.py'

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)
