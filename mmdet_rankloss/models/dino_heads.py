"""DINO heads trained by a rank loss (Rank & Sort, aLRP, RaMBO beside focal
loss; docs/detection.md#dino).

MMDetection's ``DINOHead`` scores 13 query sets a step: each decoder layer's
matched queries and the encoder's proposals (``loss_by_feat_single``) and each
layer's denoising queries (``_loss_dn_single``). The heads keep its targets and
override what those two methods score: one ranking of all (query, class) logits
of the batch per call (or per step and kind, ``rank_layers_together``). No read
of device data and no upload but ``ALRPLoss``'s ``nonzero``
(``tests/test_models/test_dino_heads.py`` counts them); prediction and weight
initialisation are the stock sigmoid head's."""
from abc import ABCMeta, abstractmethod
from contextlib import contextmanager
from typing import Dict, List, Optional, Tuple

import torch
from torch import Tensor, nn

from mmdet.models.dense_heads import DINOHead
from mmdet.registry import MODELS
from mmdet.structures.bbox import bbox_cxcywh_to_xyxy, bbox_overlaps
from ..losses.alrp_loss import ALRPLoss
from ..losses.error_driven import error_driven_loss
from ..losses.rank_sort_loss import RankSortLoss
from ..ops.checks import check_data, check_flag
from .rank_sort_heads import check_loss_type, value_weighted

__all__ = ['RankLossDINOHead', 'RankSortDINOHead', 'RaMBODINOHead',
           'ALRPDINOHead', 'positive_rows']


class _SigmoidHead(nn.Module):
    """Stands in for ``loss_cls`` where the stock head asks only whether
    it is a sigmoid head (``__init__``, ``init_weights``, prediction)."""
    use_sigmoid = True


def positive_rows(labels: Tensor, weights: Tensor, num_classes: int,
                  num_pos: int, owner: str) -> Tensor:
    """The rows (ascending) of the ``num_pos`` positives (label < C, weight >
    0) by a stable sort of fixed size, without a read; the count is checked by
    a device assertion (a ``ValueError`` on the CPU).

    Args:
        labels (Tensor): (N,) in 0..C, C = background.
        weights (Tensor): (N,) label weights.
        num_classes (int): C.
        num_pos (int): The number of positives, known on the host.
        owner (str): Named in the message.

    Returns:
        Tensor: int64 (num_pos,).
    """
    fg = (labels < num_classes) & (weights > 0)
    check_data(owner, [(fg.sum() == num_pos,
                        'the targets have another number of positives than '
                        'the count the stock head gave')])
    return torch.sort(fg.to(torch.uint8), descending=True,
                      stable=True).indices[:num_pos]


def _image_factors(bbox_preds: Tensor, img_metas: List[dict]) -> Tensor:
    """(bs * nq, 4) ``(w, h, w, h)`` of each query's image, filled from
    Python numbers (``new_tensor`` would copy host memory to the device)."""
    factors = bbox_preds.new_empty(bbox_preds.shape[:2] + (4, ))
    for i, meta in enumerate(img_metas):
        img_h, img_w = meta['img_shape'][:2]
        factors[i, :, 0::2] = img_w
        factors[i, :, 1::2] = img_h
    return factors.reshape(-1, 4)


class RankLossDINOHead(DINOHead, metaclass=ABCMeta):
    """``DINOHead`` with a rank loss as ``loss_cls``: the shared body of the
    DINO rank-loss heads. The head is a sigmoid head (C channels, stock
    prediction, focal prior) whatever the loss; subclasses give
    :attr:`loss_types` and :meth:`_cls_and_box_losses`, and may change
    :meth:`_box_terms`.

    Args:
        loss_cls (dict): The rank loss.
        *args, **kwargs: ``DINOHead``'s.
    """
    #: loss classes the head serves (empty: any loss with ``terms()``)
    loss_types: Tuple[type, ...] = ()
    #: zero columns appended to the (N, C) logits for ``loss_cls`` (a loss
    #: that ranks ``'logits'`` asks for a background column it does not
    #: read): set by :meth:`_pad_for_loss`
    _extra_columns = 0

    def __init__(self, *args, loss_cls: dict, **kwargs) -> None:
        super().__init__(*args, loss_cls=dict(type=_SigmoidHead), **kwargs)
        self.loss_cls = MODELS.build(loss_cls)
        if self.loss_types:
            check_loss_type(self, self.loss_types)

    @contextmanager
    def _sigmoid_head(self):
        """``loss_cls`` is the sigmoid stand-in inside the block."""
        rank_loss = self._modules['loss_cls']
        self._modules['loss_cls'] = _SigmoidHead()
        try:
            yield
        finally:
            self._modules['loss_cls'] = rank_loss

    def _check_logits_space(self) -> None:
        """Refuse a ``loss_cls`` that does not rank the raw logits."""
        space = self.loss_cls.score_space
        if space != 'logits':
            raise ValueError(f"{type(self).__name__}: loss_cls.score_space "
                             f"must be 'logits', got {space!r}")

    def _pad_for_loss(self) -> None:
        """Give the logits the columns ``loss_cls.get_cls_channels`` asks
        for (zeros after the C classes) in :meth:`_with_extra_columns`."""
        self._extra_columns = self.loss_cls.get_cls_channels(
            self.num_classes) - self.num_classes

    def _with_extra_columns(self, scores: Tensor) -> Tensor:
        """(N, C) logits -> (N, C + extra) with zero extra columns."""
        if not self._extra_columns:
            return scores
        return torch.cat([
            scores, scores.new_zeros(scores.shape[0], self._extra_columns)
        ], dim=1)

    def init_weights(self) -> None:
        with self._sigmoid_head():
            super().init_weights()

    def _predict_by_feat_single(self, *args, **kwargs):
        with self._sigmoid_head():
            return super()._predict_by_feat_single(*args, **kwargs)

    def loss_by_feat_single(self, cls_scores: Tensor, bbox_preds: Tensor,
                            batch_gt_instances, batch_img_metas) -> tuple:
        """The stock targets of the matched queries (one decoder layer, or
        the encoder's proposals), scored by :meth:`call_losses`."""
        num_imgs = cls_scores.size(0)
        targets = self.get_targets([cls_scores[i] for i in range(num_imgs)],
                                   [bbox_preds[i] for i in range(num_imgs)],
                                   batch_gt_instances, batch_img_metas)
        return self.call_losses(cls_scores, bbox_preds, targets,
                                batch_img_metas, 'matched')

    def _loss_dn_single(self, dn_cls_scores: Tensor, dn_bbox_preds: Tensor,
                        batch_gt_instances, batch_img_metas,
                        dn_meta: Dict[str, int]) -> tuple:
        """The stock targets of one layer's denoising queries, scored by
        :meth:`call_losses`."""
        targets = self.get_dn_targets(batch_gt_instances, batch_img_metas,
                                      dn_meta)
        return self.call_losses(dn_cls_scores, dn_bbox_preds, targets,
                                batch_img_metas, 'denoising')

    def call_losses(self, cls_scores: Tensor, bbox_preds: Tensor,
                    targets: tuple, img_metas: List[dict],
                    kind: str) -> Tuple[Tensor, Tensor, Tensor]:
        """``(loss_cls, loss_bbox, loss_iou)`` of one call from its stock
        targets.

        Args:
            cls_scores (Tensor): (bs, nq, C) logits.
            bbox_preds (Tensor): (bs, nq, 4) normalised (cx, cy, w, h).
            targets (tuple): What ``get_targets`` / ``get_dn_targets``
                return: per-image labels, label weights, box targets, box
                weights, and the host counts of positives and negatives.
            img_metas (list[dict]): With ``img_shape``.
            kind (str): ``'matched'`` or ``'denoising'``.

        Returns:
            tuple[Tensor, Tensor, Tensor]: Scalars.
        """
        labels, label_weights, bbox_targets, _, num_pos, num_neg = targets
        labels = torch.cat(labels)
        label_weights = torch.cat(label_weights)
        bbox_targets = torch.cat(bbox_targets)
        scores = cls_scores.reshape(-1, self.cls_out_channels)
        rows = positive_rows(labels, label_weights, self.num_classes,
                             num_pos, type(self).__name__)
        # the stock box targets are 0 except at the positives (box weight
        # 1): the per-positive box losses of the stock sums
        pred = bbox_preds.reshape(-1, 4)[rows]
        target = bbox_targets[rows]
        factors = _image_factors(bbox_preds, img_metas)[rows]
        pred_xyxy = bbox_cxcywh_to_xyxy(pred)
        target_xyxy = bbox_cxcywh_to_xyxy(target)
        box_terms = self._box_terms(pred, target, pred_xyxy * factors,
                                    target_xyxy * factors)
        positives = (rows, labels[rows], pred_xyxy.detach(), target_xyxy)
        return self._cls_and_box_losses(scores, labels, label_weights,
                                        positives, box_terms, num_pos,
                                        num_neg, kind)

    def _box_terms(self, pred: Tensor, target: Tensor, pred_px: Tensor,
                   target_px: Tensor) -> Tuple[Tensor, ...]:
        """The positives' stock L1 and GIoU losses (P,), unreduced, from the
        (P, 4) predicted and target (cx, cy, w, h), normalised, and the same
        boxes as xyxy in pixels."""
        l1 = self.loss_bbox(pred, target, reduction_override='none')
        l1 = l1.sum(-1) if l1.dim() > 1 else l1  # a 0-dim 0 without boxes
        giou = self.loss_iou(pred_px, target_px, reduction_override='none')
        return l1, giou

    @abstractmethod
    def _cls_and_box_losses(self, scores: Tensor, labels: Tensor,
                            label_weights: Tensor, positives: tuple,
                            box_losses: Tuple[Tensor, ...], num_pos: int,
                            num_neg: int, kind: str) -> tuple:
        """``(loss_cls, loss_bbox, loss_iou)`` from the call's (N, C)
        logits, (N,) labels and weights, the positives ``(rows, labels,
        detached predicted boxes, target boxes)`` (xyxy, normalised) and
        their box terms (:meth:`_box_terms`, each (P,))."""


def _mean(values: Tensor, count: int) -> Tensor:
    """The stock box normaliser: the sum over the positives divided by
    their number (at least 1)."""
    return values.sum() / max(count, 1)


@MODELS.register_module()
class RankSortDINOHead(RankLossDINOHead):
    """``DINOHead`` trained by Rank & Sort Loss (BRS-DETR's recipe, exact).

    The matched query's logit of its ground truth's class is a positive with
    label the (detached) IoU of its box, every other logit a negative, whatever
    the IoU (``zero_quality_as_negative`` must be False: it would size the
    ranking by a read). ``loss_cls`` is ``L_RS``; L1 and GIoU are the means
    over the positives rescaled to the value of ``L_RS`` (their ``loss_weight``
    does not matter).

    Args:
        rank_layers_together (bool): Rank the matched queries of all layers and
            the proposals as one sequence, the denoising queries as another;
            each call's ``loss_cls`` is then the joint value. Defaults to False
            (BRS-DETR: one ranking per call).
        *args, **kwargs: ``DINOHead``'s, with ``loss_cls=dict(type=
            'RankSortLoss', zero_quality_as_negative=False)``.
    """
    loss_types = (RankSortLoss, )

    def __init__(self, *args, rank_layers_together: bool = False,
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        owner = type(self).__name__
        self.rank_layers_together = check_flag(owner, 'rank_layers_together',
                                               rank_layers_together)
        if self.loss_cls.zero_quality_as_negative:
            raise ValueError(
                f'{owner} keeps every matched query a positive: set '
                'loss_cls.zero_quality_as_negative=False')
        self._check_logits_space()
        self._pending: Optional[List[dict]] = None

    def _rank_sort(self, flat: Tensor, pos_idx: Tensor, negatives: Tensor,
                   quality: Tensor) -> Tensor:
        loss = self.loss_cls
        return loss.loss_weight * error_driven_loss(
            flat, pos_idx, loss.delta, 'rs', negatives, quality,
            self_relation=loss.self_relation, precision=loss.precision)[0]

    def _cls_and_box_losses(self, scores, labels, label_weights, positives,
                            box_losses, num_pos, num_neg, kind):
        rows, pos_labels, pred_xyxy, target_xyxy = positives
        with torch.no_grad():
            quality = bbox_overlaps(pred_xyxy, target_xyxy,
                                    is_aligned=True).clamp(0, 1)
        num_classes = scores.shape[1]
        pos_idx = rows * num_classes + pos_labels  # ascending
        negatives = (label_weights > 0)[:, None].expand(
            -1, num_classes).reshape(-1)
        negatives = negatives.index_fill_(0, pos_idx, False)
        l1, giou = (_mean(b, num_pos) for b in box_losses)
        flat = scores.reshape(-1)
        if self._pending is None:
            rank = self._rank_sort(flat, pos_idx, negatives, quality)
            return rank, value_weighted(l1, rank), value_weighted(giou, rank)
        stand_in = flat.new_zeros(())  # replaced by the joint value
        self._pending.append(
            dict(kind=kind, flat=flat, pos_idx=pos_idx, negatives=negatives,
                 quality=quality, outputs=(stand_in, l1, giou)))
        return stand_in, l1, giou

    def loss_by_feat(self, *args, **kwargs) -> Dict[str, Tensor]:
        """The stock loss dict; with ``rank_layers_together`` its
        classification and box terms come from the joint rankings."""
        if not self.rank_layers_together:
            return super().loss_by_feat(*args, **kwargs)
        self._pending = []
        try:
            losses = super().loss_by_feat(*args, **kwargs)
            pending = self._pending
        finally:
            self._pending = None
        replaced = {}
        for kind in ('matched', 'denoising'):
            calls = [c for c in pending if c['kind'] == kind]
            if not calls:
                continue
            offsets, total = [], 0
            for call in calls:
                offsets.append(total)
                total += call['flat'].shape[0]
            rank = self._rank_sort(
                torch.cat([c['flat'] for c in calls]),
                torch.cat([c['pos_idx'] + o
                           for c, o in zip(calls, offsets)]),
                torch.cat([c['negatives'] for c in calls]),
                torch.cat([c['quality'] for c in calls]))
            for call in calls:
                stand_in, l1, giou = call['outputs']
                replaced[id(stand_in)] = rank
                replaced[id(l1)] = value_weighted(l1, rank)
                replaced[id(giou)] = value_weighted(giou, rank)
        return {key: replaced.get(id(value), value)
                for key, value in losses.items()}


@MODELS.register_module()
class RaMBODINOHead(RankLossDINOHead):
    """``DINOHead`` whose ``loss_cls`` is a rank loss with ``terms()``
    (``MixedRankLoss`` of RaMBO and the stock focal loss in the configs, the
    focal term normalised by the call's positives) over all (query, class)
    logits of each call; ``loss_cls`` is the sum of its loss terms, the box
    losses the stock ones.

    Args:
        *args, **kwargs: ``DINOHead``'s, ``loss_cls`` a rank loss config.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if not callable(getattr(self.loss_cls, 'terms', None)) or \
                not callable(getattr(self.loss_cls, 'get_cls_channels',
                                     None)):
            raise ValueError(
                f'{type(self).__name__} needs a rank loss with terms() and '
                'get_cls_channels() as loss_cls (e.g. MixedRankLoss, '
                f'RaMBOAPLoss), got {type(self.loss_cls).__name__}')
        self._pad_for_loss()

    def _cls_and_box_losses(self, scores, labels, label_weights, positives,
                            box_losses, num_pos, num_neg, kind):
        avg_factor = max(num_pos + num_neg * self.bg_cls_weight, 1)
        terms = self.loss_cls.terms(self._with_extra_columns(scores), labels,
                                    label_weights, avg_factor=avg_factor)
        loss_cls = sum(v for k, v in terms.items() if 'loss' in k)
        l1, giou = (_mean(b, num_pos) for b in box_losses)
        return loss_cls, l1, giou


@MODELS.register_module()
class ALRPDINOHead(RankLossDINOHead):
    """``DINOHead`` trained by aLRP Loss (Oksuz et al., NeurIPS 2020), as the
    dense aLRP heads train theirs.

    Each positive's error is ``(1 - GIoU) / 2`` of its predicted box (pixels,
    differentiable). ``loss_cls`` is ``loss_alrp_cls``, ``loss_iou`` is
    ``loss_alrp_loc`` (``w_sb * L_loc``), which replaces L1 and GIoU: their
    configs are built but unused, and the ``loss_bbox`` keys are dropped. One
    ``w_sb`` serves the 13 calls; ``ALRPSelfBalanceHook`` sets it.

    Args:
        *args, **kwargs: ``DINOHead``'s, with ``loss_cls=dict(type=
            'ALRPLoss')`` (``score_space='logits'``).
    """
    loss_types = (ALRPLoss, )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._check_logits_space()
        self._pad_for_loss()

    def _box_terms(self, pred, target, pred_px, target_px):
        """The positives' errors ``(1 - GIoU) / 2`` in [0, 1] (P,), of the
        boxes in pixels (the boxes the stock ``loss_iou`` compares)."""
        giou = bbox_overlaps(pred_px.float(), target_px.float(),
                             mode='giou', is_aligned=True)
        return ((1 - giou) / 2).clamp(0, 1),

    def _cls_and_box_losses(self, scores, labels, label_weights, positives,
                            box_losses, num_pos, num_neg, kind):
        rows = positives[0]
        errors, = box_losses
        loc_error = errors.new_zeros(scores.shape[0]).index_put(
            (rows, ), errors)
        terms = self.loss_cls.terms(self._with_extra_columns(scores), labels,
                                    label_weights, loc_error=loc_error)
        return terms['loss_alrp_cls'], None, terms['loss_alrp_loc']

    def loss_by_feat(self, *args, **kwargs) -> Dict[str, Tensor]:
        """The stock loss dict without the ``loss_bbox`` keys (aLRP's
        localisation component, ``loss_iou``, replaces L1 and GIoU)."""
        losses = super().loss_by_feat(*args, **kwargs)
        return {key: value for key, value in losses.items()
                if value is not None}
