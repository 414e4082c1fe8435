"""Heads trained by Rank & Sort Loss or aLRP Loss (Oksuz et al. 2021, 2020).

Both rank every (anchor, class) score of the batch as one sequence and measure
each positive's predicted box: RS by the (detached) IoU with its ground truth,
its continuous label; aLRP by the differentiable error ``(1 - GIoU) / 2``. The
dense heads are the stock ``RetinaHead`` / ``ATSSHead`` under
:class:`~.dense_heads.RankLossDenseHeadMixin`; the stock ``loss_by_feat`` runs
with stand-ins for ``loss_cls`` and ``loss_bbox`` that record what it would
score, so targets, assignment and box decoding are MMDetection's. RS heads
weight the box loss by ``L_RS / L_box`` (detached; ``box_weighting``:
:func:`box_loss_weights`); aLRP heads drop ``loss_bbox`` for ``loss_alrp_loc``;
ATSS heads drop centerness (as the RS paper). Both need
``reg_decoded_bbox=True``. docs/dense.md."""
from typing import List, Optional

import torch
import torch.nn as nn
from torch import Tensor

from mmdet.models.dense_heads import AnchorHead, ATSSHead, RetinaHead, RPNHead
from mmdet.models.roi_heads.bbox_heads import Shared2FCBBoxHead
from mmdet.registry import MODELS
from mmdet.structures.bbox import bbox_overlaps, get_box_tensor
from ..losses.alrp_loss import ALRPLoss
from ..losses.rank_sort_loss import RankSortLoss
from ..losses.utils import zero_loss
from ..ops.checks import check_choice, check_data
from .dense_heads import RankLossDenseHeadMixin
from .level_assignment import LevelCountsAssignerMixin

__all__ = [
    'ErrorDrivenDenseHeadMixin', 'RankSortRetinaHead', 'RankSortATSSHead',
    'ALRPRetinaHead', 'ALRPATSSHead', 'RankSortBBoxHead', 'RankSortRPNHead',
    'BOX_WEIGHTINGS', 'box_loss_weights', 'weighted_box_loss'
]

#: ``box_weighting`` of the RS heads: ``'score'`` (the authors' code) or
#: ``'uniform'`` (the earlier behaviour)
BOX_WEIGHTINGS = ('score', 'uniform')


def box_loss_weights(cls_score: Tensor, num_classes: int,
                     box_weighting: str) -> Tensor:
    """The weight of each positive's box loss in an RS head.

    Args:
        cls_score (Tensor): (P, >= C) logits of the positives (columns after
            the C classes are not read).
        num_classes (int): C.
        box_weighting (str): ``'score'``: ``max_c sigmoid(logit_c)``, detached
            (authors); ``'uniform'``: ones.

    Returns:
        Tensor: (P,) float32 (float64 for float64 logits), no graph.
    """
    dtype = torch.float64 if cls_score.dtype == torch.float64 \
        else torch.float32
    if box_weighting == 'uniform':
        return torch.ones(cls_score.shape[0], dtype=dtype,
                          device=cls_score.device)
    with torch.no_grad():
        return cls_score[:, :num_classes].to(dtype).sigmoid().amax(1)


def weighted_box_loss(per_positive: Tensor, weights: Tensor) -> Tensor:
    """``sum_i w_i L_i / sum_i w_i`` (the divisor is 1 when the weights sum
    to less than 1e-12, as in the authors' code): the box loss of an RS head
    before its value-based rescaling."""
    weights = weights.to(per_positive.dtype)
    total = weights.sum()
    divisor = torch.where(total < 1e-12, torch.ones_like(total), total)
    return (weights * per_positive).sum() / divisor


def check_loss_type(head, types) -> None:
    """Raise unless ``head.loss_cls`` is one of ``types``."""
    if not isinstance(head.loss_cls, types):
        names = ' or '.join(t.__name__ for t in types)
        raise ValueError(f'{type(head).__name__} needs loss_cls of type '
                         f'{names}, got {type(head.loss_cls).__name__}')


class BoxWeightingMixin:
    """The ``box_weighting`` argument of the RS heads (see the module doc
    and :func:`box_loss_weights`), checked when the head is built."""

    def __init__(self, *args, box_weighting: str = 'score',
                 **kwargs) -> None:
        check_choice(type(self).__name__, 'box_weighting', box_weighting,
                     BOX_WEIGHTINGS)
        super().__init__(*args, **kwargs)
        self.box_weighting = box_weighting


class _PerLevelBoxes(nn.Module):
    """Stands in for ``loss_bbox`` while the stock ``loss_by_feat`` runs:
    records the (decoded) predicted and target boxes of each call and
    returns a zero without a graph."""

    def __init__(self) -> None:
        super().__init__()
        self.preds: List[Tensor] = []
        self.targets: List[Tensor] = []

    def forward(self, pred: Tensor, target: Tensor, *args,
                **kwargs) -> Tensor:
        self.preds.append(pred)
        self.targets.append(target)
        return pred.new_zeros(())


class ErrorDrivenDenseHeadMixin(RankLossDenseHeadMixin):
    """RS / aLRP over all anchors, with each positive's box (see the module
    doc). Put it before ``RetinaHead`` or ``ATSSHead``."""

    #: loss classes the head serves
    loss_types = (RankSortLoss, ALRPLoss)
    #: the stock losses of a quality branch the rank losses replace (ATSS's
    #: centerness, PAA's IoU): kept in the graph with a zero value
    dropped_losses = ('loss_centerness', )

    def _init_layers(self) -> None:
        check_loss_type(self, self.loss_types)
        if not self.reg_decoded_bbox:
            raise ValueError(
                f'{type(self).__name__} needs reg_decoded_bbox=True: the '
                'IoU / GIoU of each positive is computed on decoded boxes '
                "(use a box loss on boxes, e.g. dict(type='GIoULoss'))")
        super()._init_layers()

    def loss_by_feat(self, *args, **kwargs) -> dict:
        boxes = _PerLevelBoxes()
        box_loss = self._modules['loss_bbox']
        self._modules['loss_bbox'] = boxes
        # a tuple, not modules: nothing is registered as a submodule
        self._box_context = (boxes, box_loss)
        try:
            losses = super().loss_by_feat(*args, **kwargs)
        finally:
            self._modules['loss_bbox'] = box_loss
            self._box_context = None
        if losses.get('loss_bbox', 0) is None:  # aLRP: loss_alrp_loc
            losses.pop('loss_bbox')
        for key in self.dropped_losses:  # the branch is dropped
            if key in losses:
                values = losses[key] if isinstance(losses[key], list) \
                    else [losses[key]]
                losses[key] = sum(v * 0 for v in values)
        return losses

    def _anchor_boxes(self, labels: Tensor):
        """``(fg, pred, target)`` from the recorded per-level calls: ``fg``
        bool (N,) (label in 0..C-1), ``pred`` and ``target`` (N, 4) decoded
        boxes, meaningful at ``fg`` (None, None without a recorded call). A
        head that scored the positives' boxes only (ATSS) gets them put at
        their rows by a stable sort of ``fg``: fixed shapes, no read."""
        boxes = self._box_context[0]
        fg = (labels >= 0) & (labels < self.num_classes)
        if not boxes.preds:
            return fg, None, None
        pred = torch.cat([get_box_tensor(p) for p in boxes.preds])
        target = torch.cat([get_box_tensor(t) for t in boxes.targets])
        n, num_pos = labels.shape[0], pred.shape[0]
        if num_pos != n:  # the positives' boxes only
            check_data(type(self).__name__, [(
                fg.sum() == num_pos,
                'the stock head scored neither a box per anchor nor one '
                'per positive; cannot match them')])  # static: a device assert
            rows = torch.sort(fg.to(torch.uint8), descending=True,
                              stable=True).indices[:num_pos]
            pred = pred.new_zeros(n, pred.shape[1]).index_put((rows, ), pred)
            target = target.new_zeros(n, target.shape[1]).index_put(
                (rows, ), target)
        return fg, pred, target

    def loss_cls_all_anchors(self, cls_scores: List[Tensor],
                             labels: List[Tensor],
                             label_weights: List[Tensor],
                             avg_factor: Optional[float] = None) -> dict:
        """RS or aLRP over all anchors with each positive's box, on fixed-size
        per-anchor tensors (non-positive rows masked): the only read of the
        data is the loss's own."""
        all_labels = torch.cat(labels)
        fg, pred, target = self._anchor_boxes(all_labels)
        scores = self._all_anchor_scores(cls_scores)
        weights = torch.cat(label_weights)
        n = scores.shape[0]
        if isinstance(self.loss_cls, ALRPLoss):
            if pred is None:
                loc_error = scores.new_zeros(n, dtype=torch.float32)
            else:
                giou = bbox_overlaps(pred.float(), target.float(),
                                     mode='giou', is_aligned=True)
                loc_error = torch.where(fg, ((1 - giou) / 2).clamp(0, 1),
                                        0.0)
            out = self.loss_cls.terms(scores, all_labels, weights,
                                      avg_factor=avg_factor,
                                      loc_error=loc_error)
            out['loss_bbox'] = None  # replaced by loss_alrp_loc
            return out
        quality = scores.new_zeros(n, dtype=torch.float32)
        box_loss = zero_loss(scores)
        if pred is not None:
            with torch.no_grad():
                iou = bbox_overlaps(pred.float(), target.float(),
                                    is_aligned=True).clamp(0, 1)
            quality = torch.where(fg, iou, 0.0)
            # the configured loss_bbox (the stand-in is in its place)
            box_loss = self._box_context[1](pred, target,
                                            reduction_override='none')
            if box_loss.dim() > 1:
                box_loss = box_loss.sum(-1)
            box_weights = box_loss_weights(
                scores, self.num_classes,
                getattr(self, 'box_weighting', 'uniform')) * fg
            box_loss = weighted_box_loss(torch.where(fg, box_loss, 0.0),
                                         box_weights)
        out = self.loss_cls.terms(scores, all_labels, weights,
                                  avg_factor=avg_factor, quality=quality)
        out['loss_bbox'] = value_weighted(box_loss, out['loss_rank_sort'])
        return out


def value_weighted(box_loss: Tensor, rank_loss: Tensor) -> Tensor:
    """``box_loss * (rank_loss / box_loss)``, the ratio detached: the RS
    paper's loss-value-based weighting (the box term then has the value of
    the ranking loss). Zero ratio when the box loss is 0."""
    box_value = box_loss.detach()
    ratio = torch.where(box_value > 0,
                        rank_loss.detach().to(box_value.dtype) /
                        box_value.clamp(min=torch.finfo(box_value.dtype).tiny),
                        torch.zeros_like(box_value))
    return box_loss * ratio


class NoCenternessPredictMixin:
    """ATSS prediction without the centerness factor (see the module
    doc)."""

    def predict_by_feat(self, cls_scores, bbox_preds, score_factors=None,
                        *args, **kwargs):
        return super().predict_by_feat(cls_scores, bbox_preds, None, *args,
                                       **kwargs)


@MODELS.register_module()
class RankSortRetinaHead(BoxWeightingMixin, ErrorDrivenDenseHeadMixin,
                         RetinaHead):
    """``RetinaHead`` trained by Rank & Sort Loss over all anchors with IoU
    labels and the value-weighted box loss. Arguments are ``RetinaHead``'s
    (``loss_cls=dict(type='RankSortLoss')``, ``reg_decoded_bbox=True``) and
    ``box_weighting`` (``'score'``, default, or ``'uniform'``; see the
    module doc)."""
    loss_types = (RankSortLoss, )


@MODELS.register_module()
class RankSortATSSHead(BoxWeightingMixin, NoCenternessPredictMixin,
                       ErrorDrivenDenseHeadMixin, ATSSHead):
    """``ATSSHead`` trained by Rank & Sort Loss, without centerness (as in
    the paper). Arguments are ``ATSSHead``'s and ``box_weighting``
    (``'score'``, default, or ``'uniform'``; see the module doc)."""
    loss_types = (RankSortLoss, )


@MODELS.register_module()
class ALRPRetinaHead(LevelCountsAssignerMixin, ErrorDrivenDenseHeadMixin,
                     RetinaHead):
    """``RetinaHead`` trained by aLRP Loss (classification and GIoU
    localisation). Arguments are ``RetinaHead``'s
    (``loss_cls=dict(type='ALRPLoss')``, ``reg_decoded_bbox=True``).
    ``train_cfg`` may give an ``ATSSAssigner``
    (:class:`~.level_assignment.LevelCountsAssignerMixin`): the aLRP
    authors' "ATSS", RetinaNet's head with ATSS assignment."""
    loss_types = (ALRPLoss, )


@MODELS.register_module()
class ALRPATSSHead(NoCenternessPredictMixin, ErrorDrivenDenseHeadMixin,
                   ATSSHead):
    """``ATSSHead`` trained by aLRP Loss, without centerness (as the RS
    heads). Arguments are ``ATSSHead``'s."""
    loss_types = (ALRPLoss, )


class _AnchorLossesRPNHead(RPNHead):
    """``RPNHead`` whose ``loss_by_feat`` returns ``AnchorHead``'s keys
    (``loss_cls`` / ``loss_bbox``), which the rank-loss mixins replace; the
    RPN names are given back by :class:`RankSortRPNHead`."""

    def loss_by_feat(self, *args, **kwargs) -> dict:
        return AnchorHead.loss_by_feat(self, *args, **kwargs)


@MODELS.register_module()
class RankSortRPNHead(BoxWeightingMixin, ErrorDrivenDenseHeadMixin,
                      _AnchorLossesRPNHead):
    """The RPN of RS-R-CNN: ``RPNHead`` trained by Rank & Sort Loss over all
    anchors of the batch (one class: objectness) with IoU labels and the RS
    heads' value-weighted box loss.

    The paper weights the RPN loss by 0.2 (``loss_cls=dict(type=
    'RankSortLoss', loss_weight=0.2)``; the box term follows) and trains
    without anchor sampling (``train_cfg.rpn.sampler=dict(type=
    'PseudoSampler')``) and with ``reg_decoded_bbox=True``. The losses keep the
    stock RPN names: ``loss_rpn_cls``, ``loss_rpn_bbox`` and, with
    ``log_diagnostics``, ``rpn_rs_ranking`` / ``rpn_rs_sorting``. Arguments are
    ``RPNHead``'s and ``box_weighting``."""
    loss_types = (RankSortLoss, )
    #: the loss's keys under the RPN's names
    rpn_keys = dict(loss_rank_sort='loss_rpn_cls', loss_bbox='loss_rpn_bbox')

    def loss_by_feat(self, cls_scores: List[Tensor],
                     bbox_preds: List[Tensor], batch_gt_instances,
                     batch_img_metas, batch_gt_instances_ignore=None) -> dict:
        losses = super().loss_by_feat(
            cls_scores, bbox_preds, batch_gt_instances, batch_img_metas,
            batch_gt_instances_ignore=batch_gt_instances_ignore)
        return {
            self.rpn_keys.get(key, key if 'rpn' in key else f'rpn_{key}'):
            value
            for key, value in losses.items()
        }


@MODELS.register_module()
class RankSortBBoxHead(BoxWeightingMixin, Shared2FCBBoxHead):
    """The bbox head of RS-R-CNN: Rank & Sort Loss over all (RoI, class) scores
    with each positive RoI's regressed-box IoU as its label, and the box loss
    weighted by ``L_RS / L_box`` (detached). The paper uses every proposal: set
    ``train_cfg.rcnn.sampler`` accordingly (the configs do).

    Args:
        box_weighting (str): ``'score'`` (authors): each positive's box loss
            weighted by its detached ``max_c sigmoid(logit_c)`` over the C
            foreground columns; ``'uniform'``: the plain mean. Defaults to
            ``'score'``.
        *args, **kwargs: ``Shared2FCBBoxHead``'s, with
            ``loss_cls=dict(type='RankSortLoss')``.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        check_loss_type(self, (RankSortLoss, ))

    def _roi_deltas(self, bbox_pred: Tensor, labels: Tensor) -> Tensor:
        """The regression output of every RoI for its label's class (N, 4)
        (the last class's for the background: masked by the callers)."""
        if self.reg_class_agnostic:
            return bbox_pred.view(bbox_pred.size(0), -1)
        rows = torch.arange(bbox_pred.size(0), device=bbox_pred.device)
        return bbox_pred.view(bbox_pred.size(0), self.num_classes,
                              -1)[rows, labels.clamp(0, self.num_classes - 1)]

    def _roi_iou(self, bbox_pred: Tensor, rois: Tensor, labels: Tensor,
                 bbox_targets: Tensor) -> Tensor:
        """IoU of every RoI's regressed box with its target (N,)."""
        with torch.no_grad():
            deltas = self._roi_deltas(bbox_pred, labels)
            boxes = get_box_tensor(self.bbox_coder.decode(rois[:, 1:],
                                                          deltas))
            targets = bbox_targets
            if not self.reg_decoded_bbox:
                targets = get_box_tensor(
                    self.bbox_coder.decode(rois[:, 1:], targets))
            return bbox_overlaps(boxes.float(), targets.float(),
                                 is_aligned=True).clamp(0, 1)

    def _box_loss(self, cls_score: Optional[Tensor], bbox_pred: Tensor,
                  rois: Tensor, labels: Tensor, bbox_targets: Tensor,
                  bbox_weights: Tensor, pos: Tensor) -> Tensor:
        """The configured ``loss_bbox`` of the positives ``pos`` (stock inputs
        and box weights), averaged as ``box_weighting`` says; computed for
        every RoI and masked (fixed shapes)."""
        pred = self._roi_deltas(bbox_pred, labels)
        if self.reg_decoded_bbox:
            pred = get_box_tensor(self.bbox_coder.decode(rois[:, 1:], pred))
        # the stock box weights applied here as mmdet's losses apply them
        # (per coordinate, or their mean for a loss per box): given to the
        # loss, they would cost a read (its "all weights 0" test)
        per_roi = self.loss_bbox(pred, bbox_targets,
                                 reduction_override='none')
        if per_roi.dim() > 1:
            per_roi = (per_roi * bbox_weights).sum(-1)
        else:
            per_roi = per_roi * bbox_weights.mean(-1)
        mode = self.box_weighting if cls_score is not None else 'uniform'
        weights = box_loss_weights(
            cls_score if cls_score is not None else pred, self.num_classes,
            mode) * pos
        return weighted_box_loss(torch.where(pos, per_roi, 0.0), weights)

    def loss(self, cls_score: Tensor, bbox_pred: Tensor, rois: Tensor,
             labels: Tensor, label_weights: Tensor, bbox_targets: Tensor,
             bbox_weights: Tensor,
             reduction_override: Optional[str] = None) -> dict:
        """The stock ``loss`` with RS and the value-weighted box loss,
        on every RoI with the positives masked (no read of the data here;
        mmdet's box losses and the accuracy read on their own)."""
        losses = dict()
        pos = (labels >= 0) & (labels < self.num_classes)
        if bbox_pred is not None:
            losses['loss_bbox'] = self._box_loss(
                cls_score, bbox_pred, rois, labels, bbox_targets,
                bbox_weights, pos)
        if cls_score is None:
            return losses
        quality = cls_score.new_zeros(labels.shape[0], dtype=torch.float32)
        if bbox_pred is not None:
            quality = torch.where(
                pos, self._roi_iou(bbox_pred, rois, labels, bbox_targets),
                0.0)
        out = self.loss_cls.terms(cls_score, labels, label_weights,
                                  reduction_override=reduction_override,
                                  quality=quality)
        losses.update(out)
        losses.update(self.loss_cls.get_accuracy(cls_score, labels))
        if 'loss_bbox' in losses:
            losses['loss_bbox'] = value_weighted(losses['loss_bbox'],
                                                  out['loss_rank_sort'])
        return losses
