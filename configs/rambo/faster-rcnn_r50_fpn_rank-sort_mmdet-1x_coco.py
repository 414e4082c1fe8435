# RS-R-CNN R50 FPN on COCO on MMDetection's recipe: the authors' model
# (`faster-rcnn_r50_fpn_rank-sort_1x_coco.py`, which says how to get the
# stock RPN back) with MMDetection's batch (2 images a GPU) and lr, and no
# score threshold. Not trained: no COCO result was measured.
# Batch: 2 images per process; lr 0.02 is for a total batch of 16,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = './faster-rcnn_r50_fpn_rank-sort_1x_coco.py'

model = dict(test_cfg=dict(rcnn=_base_.rank_sort_test_cfg))

train_dataloader = dict(batch_size=2)
optim_wrapper = dict(optimizer=dict(lr=0.02))
