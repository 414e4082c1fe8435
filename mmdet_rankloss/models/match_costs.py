"""Rank-DETR's IoU-aware matching cost for MMDetection's ``HungarianAssigner``
(Pu et al., NeurIPS 2023, "high-order matching cost").

The stock costs are summed (``FocalLossCost + BBoxL1Cost + IoUCost``); a
product of the class score and the IoU needs a cost of its own:
:class:`HighOrderMatchCost`, ``-p * IoU ** alpha``, registered in
``mmdet.registry.TASK_UTILS``. Rank-DETR switches to it for the last quarter
of training; here it is a cost like the others, to put in a config's
``match_costs`` (alone or beside them).
"""
from typing import Optional

from mmengine.structures import InstanceData
from torch import Tensor

from mmdet.models.task_modules.assigners.match_cost import BaseMatchCost
from mmdet.registry import TASK_UTILS
from mmdet.structures.bbox import bbox_overlaps
from ..ops.checks import check_number

__all__ = ['HighOrderMatchCost']


@TASK_UTILS.register_module()
class HighOrderMatchCost(BaseMatchCost):
    """``weight * -(p * IoU ** alpha)``: ``p`` the sigmoid of the query's
    logit for the ground truth's class, IoU its box's with the ground
    truth's (clamped to [0, 1]).

    Args:
        alpha (float): The IoU's exponent, >= 0. Defaults to 4.0
            (Rank-DETR).
        weight (float): Defaults to 1.0.
    """

    def __init__(self, alpha: float = 4.0, weight: float = 1.0) -> None:
        owner = type(self).__name__
        super().__init__(weight=check_number(owner, 'weight', weight))
        self.alpha = check_number(owner, 'alpha', alpha, low=0)

    def __call__(self, pred_instances: InstanceData,
                 gt_instances: InstanceData,
                 img_meta: Optional[dict] = None, **kwargs) -> Tensor:
        """The cost matrix (num_queries, num_gts).

        Args:
            pred_instances (InstanceData): ``scores`` (num_queries, C)
                logits, ``bboxes`` (num_queries, 4) xyxy.
            gt_instances (InstanceData): ``labels`` (num_gts,), ``bboxes``
                (num_gts, 4) xyxy, in the predictions' coordinates.
            img_meta (dict, optional): Unused.

        Returns:
            Tensor: (num_queries, num_gts).
        """
        prob = pred_instances.scores.sigmoid()[:, gt_instances.labels]
        iou = bbox_overlaps(pred_instances.bboxes,
                            gt_instances.bboxes).clamp(0, 1)
        return -(prob * iou.pow(self.alpha)) * self.weight
