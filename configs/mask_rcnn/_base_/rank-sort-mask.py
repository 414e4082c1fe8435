# RS-Mask R-CNN as in the authors' code (Oksuz et al., ICCV 2021): RS-R-CNN
# (`../../dense/_base_/rank-sort.py`) with the RS mask head: `RankSortRoIHead`
# hands `RankSortMaskHead` the RS box weights of the positive RoIs and the
# value of the RS loss; each positive's mask loss is 1 - Dice, averaged with
# those weights and rescaled to the RS value (docs/instance_segmentation.md);
# at most 200 positive RoIs of a batch reach the mask head. A Mask R-CNN
# config takes the whole change as one variable, with its own test settings:
#   _base_ = ['<Mask R-CNN config>.py', '<this file>']
#   model = dict(_base_.rank_sort_mask_rcnn, test_cfg=dict(rcnn=...))
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
