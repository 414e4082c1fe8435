# RS-Mask R-CNN R50 FPN on COCO as its authors run it
# (kemaloksuz/RankSortLoss `ranksort_mask_rcnn_r50_fpn_1x_coco.py`):
# MMDetection's `mask-rcnn_r50_fpn_1x_coco.py` with the RS heads of
# `_base_/rank-sort-mask.py`, 4 images per GPU on 4 GPUs at lr 0.012, test
# score threshold 0.40 (theirs). Not trained: no COCO result was measured.
# Batch: 4 images per process; lr 0.012 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['mmdet::mask_rcnn/mask-rcnn_r50_fpn_1x_coco.py',
          './_base_/rank-sort-mask.py']

custom_imports = dict(imports=['mmdet_rankloss'], allow_failed_imports=False)

model = dict(
    _base_.rank_sort_mask_rcnn, test_cfg=dict(rcnn=dict(score_thr=0.4)))

train_dataloader = dict(batch_size=4, num_workers=4)
optim_wrapper = dict(optimizer=dict(lr=0.012))
auto_scale_lr = dict(enable=True, base_batch_size=16)
