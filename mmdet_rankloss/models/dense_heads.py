"""One-stage (dense) heads trained with a rank loss over all their anchors.

MMDetection's ``AnchorHead.loss_by_feat`` and ``ATSSHead.loss_by_feat`` call
``loss_cls`` once per FPN level. That is right for a per-element loss such as
focal loss, but a rank loss would then rank each level alone: AP, and the
test-time NMS and evaluation, compare the anchors of all levels and images.
:class:`RankLossDenseHeadMixin` keeps the stock head and changes only where
``loss_cls`` is applied: it lets the stock ``loss_by_feat`` run (targets,
assignment, box and centerness losses unchanged), collects the per-level
classification inputs it hands to ``loss_cls`` and applies the rank loss
once to the concatenation of all levels of all images of the batch.

The heads stay sigmoid heads (C output channels, no background column, the
stock sigmoid at test time): positives of class c are the anchors assigned
to c, every other anchor with a label weight > 0 is a negative of c, and
anchors the assigner ignores (label weight 0) are left out of the ranking.
"""
from contextlib import contextmanager
from typing import List, Optional

import torch
import torch.nn as nn
from torch import Tensor

from mmdet.models.dense_heads import ATSSHead, RetinaHead
from mmdet.registry import MODELS

__all__ = ['RankLossDenseHeadMixin', 'RaMBORetinaHead', 'RaMBOATSSHead']

# Score spaces of a rank loss that a C-channel sigmoid head can feed: the
# logits themselves, or their sigmoid. 'softmax' needs a trained background
# logit, which a sigmoid head does not have.
DENSE_SCORE_SPACES = ('sigmoid', 'logits')


class _PerLevelInputs(nn.Module):
    """Stands in for ``loss_cls`` while the stock ``loss_by_feat`` runs: it
    records what each level would have been scored with and returns a zero
    without a graph (the head replaces that loss by the rank loss)."""

    def __init__(self) -> None:
        super().__init__()
        self.scores: List[Tensor] = []
        self.labels: List[Tensor] = []
        self.weights: List[Tensor] = []
        self.avg_factors: List[Optional[float]] = []

    def forward(self, cls_score: Tensor, labels: Tensor,
                weight: Optional[Tensor] = None,
                avg_factor: Optional[float] = None, **kwargs) -> Tensor:
        self.scores.append(cls_score)
        self.labels.append(labels)
        self.weights.append(
            torch.ones_like(labels, dtype=cls_score.dtype)
            if weight is None else weight)
        self.avg_factors.append(avg_factor)
        return cls_score.new_zeros(())

    def avg_factor(self) -> Optional[float]:
        """The normaliser the stock head gave every level (its number of
        positives, or samples): the same one for all levels, so that a
        per-anchor loss (focal, in a :class:`MixedRankLoss`) summed over the
        concatenation and divided by it is the stock sum over levels."""
        first = self.avg_factors[0]
        for other in self.avg_factors[1:]:
            if (other is None) != (first is None) or (
                    first is not None and float(other) != float(first)):
                raise RuntimeError(
                    'the stock loss_by_feat gave the levels different '
                    f'avg_factors ({self.avg_factors}); one loss over all '
                    'anchors cannot reproduce that')
        return first


def _rank_loss_score_space(loss: nn.Module) -> Optional[str]:
    """``score_space`` of a rank loss, or of the rank loss inside a wrapper
    (``MixedRankLoss.rank_loss``); None when it has none."""
    for module in (loss, getattr(loss, 'rank_loss', None)):
        space = getattr(module, 'score_space', None)
        if space is not None:
            return space
    return None


class RankLossDenseHeadMixin:
    """Rank ``loss_cls`` over all anchors, levels and images at once
    (docs/dense.md#how-the-loss-is-hooked-in).

    Put it before a stock anchor head (``class H(RankLossDenseHeadMixin,
    RetinaHead)``). ``loss_cls`` has :class:`~mmdet_rankloss.losses.
    RaMBOAPLoss`'s interface: ``terms(cls_score (N, channels), labels (N,) in
    0..C with C = background, weight (N,), avg_factor)`` returning a dict (a
    loss without ``terms`` is called; a Tensor is logged as ``loss_cls``). The
    head is a sigmoid head (C channels, stock ``predict``) whatever the loss
    config says, with a zero background column appended for a loss that ranks
    ``'logits'``. The loss is computed once on the stock per-level inputs
    concatenated (anchors of label weight 0 left out), its terms replacing the
    stock ``loss_cls`` key. The concatenation is one (anchors, C) copy;
    ``SigmoidRanker`` compares P x n pairs (small inputs only)."""

    def _init_layers(self) -> None:
        # The stock __init__ set use_sigmoid_cls from loss_cls.get(
        # 'use_sigmoid'), False for a rank loss config, and built
        # self.loss_cls; it calls _init_layers right after.
        space = _rank_loss_score_space(self.loss_cls)
        channels = getattr(self.loss_cls, 'get_cls_channels', None)
        if space is None or not callable(channels):
            raise ValueError(
                f'{type(self).__name__} needs a rank loss as loss_cls (with '
                "score_space and get_cls_channels, e.g. type='RaMBOAPLoss'), "
                f'got {type(self.loss_cls).__name__}')
        if space not in DENSE_SCORE_SPACES:
            raise ValueError(
                f'{type(self).__name__}: loss_cls.score_space={space!r} '
                f'cannot be fed by a sigmoid head; use one of '
                f'{DENSE_SCORE_SPACES}')
        self.use_sigmoid_cls = True
        self.cls_out_channels = self.num_classes
        # 1 if the loss wants a (dummy) background column after the C
        self._loss_extra_columns = channels(
            self.num_classes) - self.num_classes
        super()._init_layers()

    @contextmanager
    def _loss_cls_replaced(self, stand_in: nn.Module):
        """``self.loss_cls`` is ``stand_in`` inside the block. nn.Module keeps
        submodules in ``_modules``: swap the entry, so that a module stands
        in and the rank loss is back whatever happens."""
        rank_loss = self._modules['loss_cls']
        self._modules['loss_cls'] = stand_in
        try:
            yield
        finally:
            self._modules['loss_cls'] = rank_loss

    def _predict_by_feat_single(self, cls_score_list: List[Tensor], *args,
                                **kwargs):
        """The stock prediction with sigmoid scores, calibrated if the loss
        carries a calibration.

        ``BaseDenseHead`` hands the scores to ``loss_cls.get_activation``
        when the loss declares ``custom_cls_channels``, as RaMBOAPLoss does
        for bbox heads; that returns C + 1 columns with a dummy background
        for ``multiclass_nms``, which a dense head would take for an extra
        class. Without the rank loss in place, the stock sigmoid path runs.
        A Platt calibration ``(a, b)`` of the loss (fitted on val by
        ``tools/analysis_tools/fit_score_calibration.py``) is applied to the
        logits first, so the stock sigmoid returns ``sigmoid(a * logit +
        b)``: a monotone map, the same order and AP, scores a threshold can
        use.
        """
        calibration = getattr(self.loss_cls, 'calibration', None)
        if calibration is not None:
            a, b = calibration
            cls_score_list = [a * score + b for score in cls_score_list]
        with self._loss_cls_replaced(nn.Identity()):
            return super()._predict_by_feat_single(cls_score_list, *args,
                                                   **kwargs)

    def loss_by_feat(self, *args, **kwargs) -> dict:
        """The stock losses, with ``loss_cls`` over all anchors at once.

        Takes exactly the stock head's arguments (``cls_scores``,
        ``bbox_preds`` [, ``centernesses``], ``batch_gt_instances``,
        ``batch_img_metas``, ``batch_gt_instances_ignore``).

        Returns:
            dict: The stock head's losses without ``loss_cls``, plus the
            rank loss's outputs.
        """
        per_level = _PerLevelInputs()
        with self._loss_cls_replaced(per_level):
            losses = super().loss_by_feat(*args, **kwargs)
        losses.pop('loss_cls')
        if not per_level.scores:
            raise RuntimeError(
                f'{type(self).__name__}: the stock loss_by_feat never called '
                'loss_cls; this head is not supported by the mixin')
        losses.update(
            self.loss_cls_all_anchors(per_level.scores, per_level.labels,
                                      per_level.weights,
                                      per_level.avg_factor()))
        return losses

    def loss_cls_all_anchors(self, cls_scores: List[Tensor],
                             labels: List[Tensor],
                             label_weights: List[Tensor],
                             avg_factor: Optional[float] = None) -> dict:
        """The rank loss on the concatenated per-level inputs.

        Args:
            cls_scores (list[Tensor]): Per level (N_l, C) logits, all images.
            labels (list[Tensor]): Per level (N_l,) labels, C = background.
            label_weights (list[Tensor]): Per level (N_l,) weights, 0 for
                anchors the assigner ignores.
            avg_factor (float, optional): The stock normaliser of ``loss_cls``
                (RaMBO ignores it; a mix's focal term divides by it).

        Returns:
            dict: The loss's ``terms()`` (a loss without: its output under
            ``loss_cls``).
        """
        loss = getattr(self.loss_cls, 'terms', self.loss_cls)
        out = loss(self._all_anchor_scores(cls_scores), torch.cat(labels),
                   torch.cat(label_weights), avg_factor=avg_factor)
        return out if isinstance(out, dict) else dict(loss_cls=out)

    def _all_anchor_scores(self, cls_scores: List[Tensor]) -> Tensor:
        """The levels' scores concatenated, with the zero background column
        the loss asks for (if any)."""
        scores = torch.cat(cls_scores)
        if self._loss_extra_columns:
            scores = torch.cat([
                scores,
                scores.new_zeros(scores.shape[0], self._loss_extra_columns)
            ], dim=1)
        return scores


@MODELS.register_module()
class RaMBORetinaHead(RankLossDenseHeadMixin, RetinaHead):
    """``RetinaHead`` whose ``loss_cls`` (RaMBO AP loss) ranks all anchors
    of all levels and images at once; see :class:`RankLossDenseHeadMixin`.
    Arguments are ``RetinaHead``'s."""


@MODELS.register_module()
class RaMBOATSSHead(RankLossDenseHeadMixin, ATSSHead):
    """``ATSSHead`` whose ``loss_cls`` (RaMBO AP loss) ranks all anchors of
    all levels and images at once; box and centerness losses are the stock
    ones. See :class:`RankLossDenseHeadMixin`. Arguments are
    ``ATSSHead``'s."""
