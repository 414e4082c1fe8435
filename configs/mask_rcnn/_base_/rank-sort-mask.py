# RS-Mask R-CNN as in the authors' code (Oksuz et al., ICCV 2021): RS-R-CNN
# with `RankSortMaskHead`, whose 1 - Dice mask loss is weighted by the RS box
# weights and rescaled to the RS value (docs/instance_segmentation.md); at
# most 200 positive RoIs of a batch reach it. A config takes the whole change
# as one variable: `model = dict(_base_.rank_sort_mask_rcnn, test_cfg=...)`.
_base_ = '../../dense/_base_/rank-sort.py'

rank_sort_mask_roi_head = dict(
    type='RankSortRoIHead',
    max_mask_rois=200,
    bbox_head=_base_.rank_sort_rcnn_head,
    mask_head=dict(
        type='RankSortMaskHead',
        loss_mask=dict(
            _delete_=True,  # replaces Mask R-CNN's cross-entropy
            type='DiceLoss',
            use_sigmoid=True,
            activate=True,
            naive_dice=False,
            eps=5e-6,
            loss_weight=1.0)))
# the RS RPN, the RS RoI head and both samplers of RS-R-CNN
rank_sort_mask_rcnn = dict(
    rpn_head=_base_.rank_sort_rpn_head,
    roi_head=rank_sort_mask_roi_head,
    train_cfg=dict(
        rpn=dict(sampler=_base_.rank_sort_rpn_sampler),
        rcnn=dict(sampler=_base_.rank_sort_rcnn_sampler)))
