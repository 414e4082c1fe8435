"""Anchor heads whose assigner takes the number of anchors of each level.

MMDetection's ``ATSSAssigner`` picks, level by level, the ``topk`` anchors
closest to each ground truth, so its ``assign(pred_instances,
num_level_priors, gt_instances, gt_instances_ignore)`` takes the number of
anchors of each FPN level inside the image. ``ATSSHead`` passes it;
``AnchorHead`` (and so ``RetinaHead``) calls ``assign(pred_instances,
gt_instances, gt_instances_ignore)`` and cannot. ``ATSSHead`` is another
network, though (GroupNorm in the towers, a learnable scale per level, a
centerness branch). :class:`LevelCountsAssignerMixin` lets an anchor head
keep its own network and use such an assigner: the aLRP authors' "ATSS"
RetinaNet is RetinaNet's head with ATSS assignment
(``configs/dense/atss/atss_r50_fpn_alrp_100e_coco-512.py``). Assignment and
targets stay MMDetection's; the mixin only hands the assigner the counts
(one read of the inside flags per image, as ``ATSSHead`` reads them).
"""
import inspect
from typing import List, Optional

import torch
from mmengine.structures import InstanceData
from torch import Tensor

from mmdet.models.task_modules.prior_generators import anchor_inside_flags

__all__ = ['LevelCountsAssignerMixin', 'needs_level_counts']


def needs_level_counts(assigner) -> bool:
    """Whether ``assigner.assign`` takes ``num_level_priors`` (the anchors
    of each level inside the image), as ``ATSSAssigner``'s does."""
    assign = getattr(assigner, 'assign', None)
    if assign is None:
        return False
    return 'num_level_priors' in inspect.signature(assign).parameters


class _WithLevelCounts:
    """Stands in for the assigner during one image's target computation:
    the stock call, with the image's anchors per level added."""

    def __init__(self, assigner, num_level_priors: List[int]) -> None:
        self.assigner = assigner
        self.num_level_priors = num_level_priors

    def assign(self, pred_instances: InstanceData,
               gt_instances: InstanceData,
               gt_instances_ignore: Optional[InstanceData] = None, **kwargs):
        return self.assigner.assign(pred_instances, self.num_level_priors,
                                    gt_instances, gt_instances_ignore,
                                    **kwargs)


class LevelCountsAssignerMixin:
    """Put it before an ``AnchorHead`` subclass (``class H(
    LevelCountsAssignerMixin, ..., RetinaHead)``): an assigner of
    ``train_cfg`` that takes ``num_level_priors`` (``ATSSAssigner``) gets,
    for each image, the number of anchors of each level inside the image
    (``anchor_inside_flags`` with ``train_cfg['allowed_border']``, as
    ``ATSSHead`` counts them); any other assigner is called as the stock
    head calls it. Nothing else changes.
    """

    def get_targets(self, anchor_list: List[List[Tensor]], *args,
                    **kwargs) -> tuple:
        """The stock targets; the level sizes are kept for the per-image
        calls (``anchor_list``: per image, per level (A_l, 4))."""
        self._level_sizes = [anchors.size(0) for anchors in anchor_list[0]]
        try:
            return super().get_targets(anchor_list, *args, **kwargs)
        finally:
            self._level_sizes = None

    def _get_targets_single(self, flat_anchors: Tensor, valid_flags: Tensor,
                            gt_instances: InstanceData, img_meta: dict,
                            *args, **kwargs) -> tuple:
        assigner = self.assigner
        if not needs_level_counts(assigner):
            return super()._get_targets_single(flat_anchors, valid_flags,
                                               gt_instances, img_meta,
                                               *args, **kwargs)
        inside = anchor_inside_flags(flat_anchors, valid_flags,
                                     img_meta['img_shape'][:2],
                                     self.train_cfg['allowed_border'])
        counts = torch.stack(
            [flags.sum() for flags in inside.split(self._level_sizes)])
        self.assigner = _WithLevelCounts(assigner, counts.tolist())
        try:
            return super()._get_targets_single(flat_anchors, valid_flags,
                                               gt_instances, img_meta,
                                               *args, **kwargs)
        finally:
            self.assigner = assigner
