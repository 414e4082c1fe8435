# aLRP Loss "ATSS" R50 FPN on COCO, the authors' recipe: kemaloksuz/aLRPLoss,
# configs/alrp_loss/alrp_loss_retinanet_r50_fpn_ATSS_100e_coco500.py
# (MMDetection 2.x): their aLRP RetinaNet recipe with ATSS assignment
# (docs/dense.md). On MMDetection's ATSS recipe:
# `atss_r50_fpn_alrp_mmdet-1x_coco.py`.
# Batch: 8 images per process; lr 0.008 is for a total batch of 32,
# the authors' 4 GPUs x 8 images: `tools/dist_train.sh CONFIG 4` trains it,
# each process ranking its own 8 images as theirs did (docs/multi_gpu.md).
_base_ = '../retinanet/retinanet_r50_fpn_alrp_100e_coco-512.py'

model = dict(
    bbox_head=dict(anchor_generator=dict(ratios=[1.0])),
    train_cfg=dict(
        _delete_=True,
        assigner=dict(type='ATSSAssigner', topk=9),
        allowed_border=-1,
        pos_weight=-1,
        debug=False))

# the RetinaNet recipe's warm-up and 100 epochs, later steps
param_scheduler = [
    _base_.param_scheduler[0],
    dict(_base_.param_scheduler[1], milestones=[75, 95])
]
