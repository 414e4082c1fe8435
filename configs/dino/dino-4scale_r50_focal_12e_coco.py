# DINO-4scale R50 on COCO with focal loss: MMDetection's config as it ships
# (`mmdet::dino/dino-4scale_r50_8xb2-12e_coco.py`, 49.0 AP there), the
# baseline of the rank-loss DINO twins. Not trained in this project.
# Batch: 2 images per process; lr 0.0001 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = 'mmdet::dino/dino-4scale_r50_8xb2-12e_coco.py'

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)
auto_scale_lr = dict(enable=True, base_batch_size=16)
