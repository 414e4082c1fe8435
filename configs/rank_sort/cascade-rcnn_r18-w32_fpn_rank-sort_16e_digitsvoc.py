# RS-Cascade R-CNN on DigitsVOC: the RS Faster R-CNN of
# `../digitsvoc/faster-rcnn_r18-w32_fpn_rank-sort_16e_digitsvoc.py` (its RS
# RPN, `RankSortBBoxHead`, data, schedule and lr, not selected for the
# cascade; stock RPN: as that config says) made the three-stage cascade of
# `cascade-rcnn_r50_fpn_rank-sort_1x_coco.py`.
# Batch: 8 images per process; lr 0.02 is for a total batch of 8,
# and auto_scale_lr scales it to the total (docs/multi_gpu.md).
_base_ = ['../digitsvoc/faster-rcnn_r18-w32_fpn_rank-sort_16e_digitsvoc.py']

model = dict(
    type='CascadeRCNN',
    roi_head=dict(
        _delete_=True,
        type='CascadeRoIHead',
        num_stages=3,
        stage_loss_weights=[1, 1, 1],
        bbox_roi_extractor=_base_.model.roi_head.bbox_roi_extractor,
        bbox_head=[
            dict(_base_.model.roi_head.bbox_head, reg_class_agnostic=True)
            for _ in range(3)
        ]),
    train_cfg=dict(rcnn=[
        dict(
            _base_.model.train_cfg.rcnn,
            assigner=dict(
                _base_.model.train_cfg.rcnn.assigner,
                pos_iou_thr=iou,
                neg_iou_thr=iou,
                min_pos_iou=iou)) for iou in (0.5, 0.6, 0.7)
    ]))
