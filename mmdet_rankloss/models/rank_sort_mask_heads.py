"""RS-Mask R-CNN: the mask branch of a Rank & Sort RoI head (Oksuz et al., ICCV
2021; docs/instance_segmentation.md#rs-mask-r-cnn).

Each positive RoI's mask loss is ``1 - Dice`` of its class's sigmoid mask and
its 28 x 28 target, ``Dice = 2 sum(p t) / (sum p^2 + sum t^2 + 1e-5)``,
averaged with the RS box weights and rescaled to the RS value (ratio detached);
at most 200 positive RoIs reach the mask head. :class:`RankSortRoIHead` hands
:class:`RankSortMaskHead` the weights and value of its
:class:`~.rank_sort_heads.RankSortBBoxHead`; each weight stays with its RoI
(the authors' code mixes the drawn and image orders)."""
import copy
from typing import List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from mmdet.models.roi_heads import StandardRoIHead
from mmdet.models.roi_heads.mask_heads import FCNMaskHead
from mmdet.models.task_modules.samplers import SamplingResult
from mmdet.registry import MODELS
from mmdet.structures.bbox import bbox2roi
from mmdet.utils import InstanceList
from ..ops.checks import check_int
from .rank_sort_heads import (RankSortBBoxHead, box_loss_weights,
                              value_weighted, weighted_box_loss)

__all__ = [
    'RankSortMaskHead', 'RankSortRoIHead', 'RS_MASK_LOSS',
    'rank_sort_mask_loss', 'keep_positives'
]

#: The authors' mask loss: ``1 - Dice`` per RoI, eps 1e-5 in the
#: denominator (MMDetection adds ``eps`` to each of its two sums)
RS_MASK_LOSS = dict(
    type='DiceLoss',
    use_sigmoid=True,
    activate=True,
    naive_dice=False,
    eps=5e-6,
    loss_weight=1.0)


def rank_sort_mask_loss(per_roi: Tensor,
                        weights: Optional[Tensor] = None,
                        target_value: Optional[Tensor] = None) -> Tensor:
    """The RS mask loss of a batch from each positive RoI's mask loss.

    Args:
        per_roi (Tensor): (P,) mask loss of each positive RoI.
        weights (Tensor, optional): (P,) weights of the positives (the RS
            box loss's, see :func:`~.rank_sort_heads.box_loss_weights`);
            None: uniform.
        target_value (Tensor, optional): 0-d value the loss is rescaled to
            (the RoI head's RS loss; only its value is read); None: no
            rescaling.

    Returns:
        Tensor: 0-d, ``sum_i w_i L_i / sum_i w_i`` (divisor 1 when the
        weights sum to less than 1e-12), times ``target_value / that``
        (detached; 0 when the average is 0) if ``target_value`` is given.
        A zero connected to the graph for P = 0.
    """
    if per_roi.numel() == 0:
        return per_roi.sum() * 0
    if weights is None:
        weights = torch.ones_like(per_roi)
    loss = weighted_box_loss(per_roi, weights)
    if target_value is None:
        return loss
    return value_weighted(loss, target_value)


def keep_positives(sampling_results: Sequence[SamplingResult],
                   weights: Tensor, cap: Optional[int]
                   ) -> Tuple[List[SamplingResult], Tensor]:
    """At most ``cap`` positive RoIs of the batch, drawn at random.

    Args:
        sampling_results (Sequence[SamplingResult]): One per image; the
            positives are taken in image order, then in each image's order.
        weights (Tensor): (P,) one weight per positive, in that order.
        cap (int, optional): The most positives kept; None keeps all.

    Returns:
        tuple: The sampling results with only the kept positives (copies;
        the inputs are not changed) and their weights (P',), each still
        with its RoI. Unchanged when there are at most ``cap`` positives.
        The draw uses torch's global generator (on the CPU).
    """
    counts = [res.pos_priors.shape[0] for res in sampling_results]
    total = sum(counts)
    if cap is None or total <= cap:
        return list(sampling_results), weights
    kept = torch.randperm(total)[:cap].sort().values
    out, start = [], 0
    for res, count in zip(sampling_results, counts):
        rows = kept[(kept >= start) & (kept < start + count)] - start
        out.append(_positives_subset(res, rows))
        start += count
    return out, weights[kept.to(weights.device)]


def _positives_subset(res: SamplingResult, rows: Tensor) -> SamplingResult:
    """A copy of ``res`` with the positives at ``rows`` (CPU indices)."""
    sub = copy.copy(res)
    for name in ('pos_inds', 'pos_priors', 'pos_is_gt',
                 'pos_assigned_gt_inds', 'pos_gt_labels', 'pos_gt_bboxes'):
        value = getattr(res, name, None)
        if value is not None:
            setattr(sub, name, value[rows.to(value.device)])
    return sub


@MODELS.register_module()
class RankSortMaskHead(FCNMaskHead):
    """``FCNMaskHead`` with the RS-Mask R-CNN mask loss (module doc).

    ``loss_mask`` is applied to each positive RoI's mask logits of its
    class, (P, H, W), with ``reduction_override='none'``; a loss that
    returns more than one value per RoI is averaged over them. The per-RoI
    losses are then combined by :func:`rank_sort_mask_loss` with the
    weights and the RS value that :class:`RankSortRoIHead` gives
    (uniform and unscaled under MMDetection's ``StandardRoIHead``).

    Args:
        loss_mask (dict): A loss of ``(pred, target)`` per RoI. Defaults to
            :data:`RS_MASK_LOSS` (``1 - Dice``, the authors').
        *args, **kwargs: ``FCNMaskHead``'s.
    """

    def __init__(self, *args, loss_mask: dict = RS_MASK_LOSS,
                 **kwargs) -> None:
        if isinstance(loss_mask, dict) and loss_mask.get('use_mask'):
            raise ValueError(
                f'{type(self).__name__}: loss_mask must be a loss of (pred, '
                'target) per RoI, e.g. '
                "dict(type='DiceLoss', use_sigmoid=True, naive_dice=False, "
                f"eps=5e-6), got {dict(loss_mask)} (use_mask needs the "
                'labels; set _delete_=True to replace a base config\'s)')
        super().__init__(*args, loss_mask=loss_mask, **kwargs)

    def loss_and_target(self,
                        mask_preds: Tensor,
                        sampling_results: List[SamplingResult],
                        batch_gt_instances: InstanceList,
                        rcnn_train_cfg,
                        roi_weights: Optional[Tensor] = None,
                        target_value: Optional[Tensor] = None) -> dict:
        """The RS mask loss and the targets.

        Args:
            mask_preds (Tensor): (P, C or 1, H, W) mask logits of the
                positive RoIs.
            sampling_results (list[SamplingResult]): Of every image.
            batch_gt_instances (list[InstanceData]): With ``masks``.
            rcnn_train_cfg (ConfigDict): ``train_cfg`` of the RoI head.
            roi_weights (Tensor, optional): (P,) weights of the positives;
                None: uniform.
            target_value (Tensor, optional): 0-d value to rescale the loss
                to; None: not rescaled.

        Returns:
            dict: ``loss_mask`` (a dict with ``loss_mask``) and
            ``mask_targets`` (P, H, W), as ``FCNMaskHead``'s.
        """
        mask_targets = self.get_targets(sampling_results, batch_gt_instances,
                                        rcnn_train_cfg)
        labels = torch.cat([res.pos_gt_labels for res in sampling_results])
        if self.class_agnostic:
            labels = torch.zeros_like(labels)
        rows = torch.arange(mask_preds.shape[0], device=mask_preds.device)
        # float32 like the authors' force_fp32 (fp64 stays fp64)
        logits = mask_preds[rows, labels]
        if logits.dtype in (torch.float16, torch.bfloat16):
            logits = logits.float()
        if mask_preds.shape[0] == 0:
            per_roi = logits.sum((1, 2))
        else:
            per_roi = self.loss_mask(logits, mask_targets,
                                     reduction_override='none')
            if per_roi.dim() > 1:
                per_roi = per_roi.flatten(1).mean(1)
        loss = rank_sort_mask_loss(per_roi, roi_weights, target_value)
        return dict(loss_mask=dict(loss_mask=loss), mask_targets=mask_targets)


@MODELS.register_module()
class RankSortRoIHead(StandardRoIHead):
    """``StandardRoIHead`` of RS-Mask R-CNN (module doc): the bbox head is
    a :class:`~.rank_sort_heads.RankSortBBoxHead`, the mask head a
    :class:`RankSortMaskHead`, which gets the positives' box weights and
    the RS value of the bbox head's loss.

    Args:
        max_mask_rois (int, optional): The most positive RoIs of a batch
            that reach the mask head, drawn at random (the authors' 200);
            None: all. Defaults to 200.
        *args, **kwargs: ``StandardRoIHead``'s; the mask RoI extractor must
            not be shared with the bbox head (``mask_roi_extractor`` given,
            as in Mask R-CNN).
    """

    def __init__(self, *args, max_mask_rois: Optional[int] = 200,
                 **kwargs) -> None:
        owner = type(self).__name__
        if max_mask_rois is not None:
            check_int(owner, 'max_mask_rois', max_mask_rois, minimum=1)
        super().__init__(*args, **kwargs)
        self.max_mask_rois = max_mask_rois
        if not isinstance(self.bbox_head, RankSortBBoxHead):
            raise ValueError(
                f'{owner}: bbox_head must be a RankSortBBoxHead (its RS value '
                'and box weights set the mask loss), got '
                f'{type(self.bbox_head).__name__}')
        if self.with_mask and not isinstance(self.mask_head,
                                             RankSortMaskHead):
            raise ValueError(
                f'{owner}: mask_head must be a RankSortMaskHead, got '
                f'{type(self.mask_head).__name__}')
        if self.with_mask and self.share_roi_extractor:
            raise ValueError(
                f'{owner}: mask_roi_extractor must be given (a shared RoI '
                'extractor is not supported), got None')
        self._mask_context = None

    def bbox_loss(self, x: Tuple[Tensor],
                  sampling_results: List[SamplingResult]) -> dict:
        """The stock box loss; keeps, for :meth:`mask_loss`, the weights of
        the positive RoIs (those of the RS box loss) and the RS value."""
        results = super().bbox_loss(x, sampling_results)
        scores = results['cls_score']
        starts, offset = [], 0
        for res in sampling_results:  # rows: each image's positives first
            starts.append(torch.arange(offset, offset + len(res.pos_priors),
                                       device=scores.device))
            offset += len(res.pos_priors) + len(res.neg_priors)
        pos_rows = torch.cat(starts) if starts else scores.new_zeros(
            0, dtype=torch.long)
        weights = box_loss_weights(scores[pos_rows],
                                   self.bbox_head.num_classes,
                                   self.bbox_head.box_weighting)
        self._mask_context = (weights,
                              results['loss_bbox']['loss_rank_sort'])
        return results

    def mask_loss(self, x: Tuple[Tensor],
                  sampling_results: List[SamplingResult], bbox_feats: Tensor,
                  batch_gt_instances: InstanceList) -> dict:
        """The RS mask loss of at most ``max_mask_rois`` positives."""
        if self._mask_context is None:
            raise RuntimeError(f'{type(self).__name__}: mask_loss needs '
                               'bbox_loss to run first (with_bbox)')
        weights, value = self._mask_context
        self._mask_context = None
        sampling_results, weights = keep_positives(sampling_results, weights,
                                                   self.max_mask_rois)
        pos_rois = bbox2roi([res.pos_priors for res in sampling_results])
        mask_results = self._mask_forward(x, pos_rois)
        out = self.mask_head.loss_and_target(
            mask_results['mask_preds'], sampling_results, batch_gt_instances,
            self.train_cfg, roi_weights=weights, target_value=value)
        mask_results.update(loss_mask=out['loss_mask'])
        return mask_results
