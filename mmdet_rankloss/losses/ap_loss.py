"""RaMBO AP loss for detection (Rolinek et al., CVPR 2020, sections 4.3-4.6).

The loss reads: check, select scores, rank per class and across classes,
combine, log; its parts are in :mod:`.score_space`, :mod:`.ap_rankers`,
:mod:`.average_precision` and :mod:`.memory`."""
from typing import Dict, Optional, Tuple

import torch
import torch.nn as nn
from torch import Tensor

from ..ops.checks import check_flag, check_number, check_positive
from ..ops.device import reads_are_free
from ..ops.distributed import gather_for_ranking
from ..optional_mmdet import MODELS
from .ap_rankers import APRanker, BlackboxRanker
from .average_precision import (APLossResult, average_precision_loss,
                                rambo_ap_loss)
from .memory import ScoreMemory, ScoreMemoryMixin
from .score_space import ClsHooksMixin, ScoreSpace
from .utils import TermsLoss, check_reduction, zero_loss

__all__ = ['rambo_ap_loss', 'RaMBOAPLoss', 'average_precision_loss']

_RANKERS = ('BlackboxRanker', 'SigmoidRanker', 'SorterRanker')


@MODELS.register_module()
class RaMBOAPLoss(TermsLoss, ClsHooksMixin, ScoreMemoryMixin, nn.Module):
    """RaMBO mAP + APC loss for the classifier of a two-stage detector.

    ``L = loss_weight * (map_weight * L_mAP + apc_weight * L_APC)``: ``L_mAP``
    is ``1 - AP`` of each class with a positive among the RoIs and the memory
    (section 4.3), ``L_APC`` that of all (RoI, class) scores as one sequence
    (Eq. 23). A RoI of class ``c`` is a positive of column ``c`` only; RoIs of
    weight 0 are left out. The memory (:class:`~.memory.ScoreMemory`), the
    diagnostics, compiling and the head hooks: ``docs/losses.md``.

    Args:
        memory (int): Previous batches kept (tau), >= 0. Defaults to 7.
        margin (float): Margin alpha of Eq. 14 in ranked-score units, >= 0.
            Defaults to 0.15 (paper).
        lambda_val (float): Algorithm 1's strength, > 0. Defaults to 0.5.
        map_weight (float): Weight of ``L_mAP``, >= 0. Defaults to 2/3.
        apc_weight (float): Weight of ``L_APC``, >= 0. Defaults to 1/3.
        score_space (str): ``'logits'``, ``'softmax'`` or ``'sigmoid'``
            (:class:`~.score_space.ScoreSpace`). Defaults to ``'logits'``.
        normalize_ranks (bool): See :func:`rambo_ap_loss`. Defaults to True.
        positive_rank_grad (bool): See :func:`rambo_ap_loss`.
            Defaults to False.
        loss_weight (float): Multiplies both terms, >= 0. Defaults to 1.0.
        reduction (str): ``'mean'`` or ``'sum'`` over classes in ``L_mAP``.
            Defaults to ``'mean'``.
        global_ranking (bool): Rank the RoIs of all processes together (loss
            and gradient of the concatenated batch). Defaults to False.
        ranker (dict, optional): The ranking back-end, e.g.
            ``dict(type='SigmoidRanker', temperature=1.0)``. Defaults to None:
            ``BlackboxRanker`` from ``lambda_val``, ``normalize_ranks`` and
            ``positive_rank_grad`` (which must then keep their defaults).
        calibration (tuple[float, float], optional): Platt ``(a, b)`` of the
            test-time scores. Defaults to None.
        log_diagnostics (bool): Return the dict of :meth:`terms` instead of
            the scalar loss. Defaults to False.
        memory_shape (tuple[int, int], optional): ``(rows, classes)`` of the
            memory allocated at construction (rows: the most RoIs of a
            training call, of all processes with ``global_ranking``), for
            ``torch.compile``. Defaults to None (sized by the first call).
    """

    def __init__(self,
                 memory: int = 7,
                 margin: float = 0.15,
                 lambda_val: float = 0.5,
                 map_weight: float = 2 / 3,
                 apc_weight: float = 1 / 3,
                 score_space: str = 'logits',
                 normalize_ranks: bool = True,
                 positive_rank_grad: bool = False,
                 loss_weight: float = 1.0,
                 reduction: str = 'mean',
                 global_ranking: bool = False,
                 ranker: Optional[dict] = None,
                 calibration: Optional[Tuple[float, float]] = None,
                 log_diagnostics: bool = False,
                 memory_shape: Optional[Tuple[int, int]] = None) -> None:
        super().__init__()
        owner = type(self).__name__
        self.log_diagnostics = check_flag(owner, 'log_diagnostics',
                                          log_diagnostics)
        self.space = ScoreSpace(score_space, calibration, owner)
        self._memory = ScoreMemory(memory, owner, fill=float('-inf'))
        self.memory = self._memory.size
        self._reserve_memory(memory_shape, targets_per_column=True)
        self.margin, self.map_weight, self.apc_weight, self.loss_weight = (
            check_number(owner, name, value, low=0)
            for name, value in (('margin', margin), ('map_weight', map_weight),
                                ('apc_weight', apc_weight),
                                ('loss_weight', loss_weight)))
        self.reduction = check_reduction(owner, reduction)
        self.global_ranking = check_flag(owner, 'global_ranking',
                                         global_ranking)
        self.ranker = self._build_ranker(
            ranker, check_positive(owner, 'lambda_val', lambda_val),
            check_flag(owner, 'normalize_ranks', normalize_ranks),
            check_flag(owner, 'positive_rank_grad', positive_rank_grad))

    @property
    def score_space(self) -> str:
        return self.space.name

    @property
    def calibration(self) -> Optional[Tuple[float, float]]:
        return self.space.calibration

    @property
    def cls_hooks(self) -> ScoreSpace:
        return self.space

    @staticmethod
    def _build_ranker(ranker, lambda_val: float, normalize_ranks: bool,
                      positive_rank_grad: bool) -> nn.Module:
        if ranker is None:
            return BlackboxRanker(lambda_val, normalize_ranks,
                                  positive_rank_grad)
        changed = [
            name for name, value, default in (
                ('lambda_val', lambda_val, 0.5),
                ('normalize_ranks', normalize_ranks, True),
                ('positive_rank_grad', positive_rank_grad, False))
            if value != default
        ]
        if changed:
            raise ValueError(
                f'{", ".join(changed)} of RaMBOAPLoss only configure the '
                f'default ranker; with ranker={ranker!r} set them inside the '
                'ranker config')
        if isinstance(ranker, APRanker):
            return ranker
        if not isinstance(ranker, dict) or ranker.get('type') not in _RANKERS:
            raise ValueError('RaMBOAPLoss: ranker must be None, an APRanker '
                             f'or a config dict with type in {_RANKERS}, '
                             f'got {ranker!r}')
        return MODELS.build(ranker)

    def terms(self,
              cls_score: Tensor,
              labels: Tensor,
              weight: Optional[Tensor] = None,
              avg_factor: Optional[float] = None,
              reduction_override: Optional[str] = None,
              diagnostics: Optional[bool] = None) -> Dict[str, Tensor]:
        """Weighted mAP and APC losses and, on request, the diagnostics.

        Args:
            cls_score (Tensor): Classifier output (N, C + 1), background last
                ('softmax', 'logits'), or (N, C) ('sigmoid').
            labels (Tensor): Labels (N,) in 0..C, C = background.
            weight (Tensor, optional): RoI weights (N,); only ``> 0`` matters.
            avg_factor (float, optional): Ignored (AP is normalised).
            reduction_override (str, optional): ``'mean'`` or ``'sum'``;
                ``'none'`` raises (a rank loss has no per-element terms).
            diagnostics (bool, optional): Add the diagnostics (docs/losses.md).
                Defaults to None: ``log_diagnostics``.

        Returns:
            dict[str, Tensor]: ``loss_rambo_map``, ``loss_rambo_apc`` and, with
            ``diagnostics``, the logged diagnostics.
        """
        if diagnostics is None:
            diagnostics = self.log_diagnostics
        reduction = self.reduction if reduction_override is None else \
            check_reduction(type(self).__name__, reduction_override,
                            'reduction_override')
        num_classes = self.space.check_inputs(cls_score, labels, weight)
        masked = self.ranker.masks_items and weight is not None
        scores, targets = self._select(cls_score, labels, weight,
                                       num_classes, masked)
        # the gradient is read for the diagnostics only
        with_grad = diagnostics and torch.is_grad_enabled() and \
            cls_score.requires_grad
        per_class, across = self.ranker.rank_classes(
            scores, targets, self._stored(scores), self.margin, reduction,
            with_grad, masked)
        if self.training and scores.shape[0]:
            self._memory.append(scores, targets)
        out = self._combine(cls_score, per_class, across)
        if diagnostics:
            out.update(self._logged(per_class, across, targets, with_grad))
        return out

    def _stored(self, scores: Tensor) -> Optional[Tuple[Tensor, Tensor]]:
        """The memory: padding included (``-inf`` rows, not ranked) for
        a ranker that takes them, left out (a host read) for the others."""
        stored = self._memory.read(scores)
        if stored is None or self.ranker.masks_items:
            return stored
        keep = (stored[0][:, 0] > float('-inf')).nonzero().squeeze(1)
        return (stored[0][keep], stored[1][keep]) if keep.numel() else None

    def _select(self, cls_score: Tensor, labels: Tensor,
                weight: Optional[Tensor], num_classes: int,
                masked: bool) -> Tuple[Tensor, Tensor]:
        """The ranked scores (N, C) and their targets (bool); RoIs of
        weight 0 are ``-inf`` rows without a positive (``masked``: every
        shape stays the input's) or left out; all processes' with
        ``global_ranking``."""
        scores = self.space.ranked(cls_score, num_classes)
        classes = torch.arange(num_classes, device=labels.device)
        targets = labels.long().unsqueeze(1) == classes
        if masked:
            dropped = (weight <= 0).unsqueeze(1)
            scores = scores.masked_fill(dropped, float('-inf'))
            targets = targets & ~dropped
        elif weight is not None:
            # one read for both (a boolean index reads each time)
            keep = (weight > 0).nonzero().squeeze(1)
            scores, targets = scores[keep], targets[keep]
        if self.global_ranking:
            (scores, targets), _ = gather_for_ranking(scores, targets)
        return scores, targets

    def _combine(self, cls_score: Tensor, per_class: Optional[APLossResult],
                 across: Optional[APLossResult]) -> Dict[str, Tensor]:
        """The weighted losses; a zero that keeps the graph where a
        ranking is missing (only a back-end that leaves items out misses
        one; the blackbox one ranks every batch, empty or not)."""
        zero = zero_loss(cls_score) if per_class is None or \
            across is None else None
        scale = self.loss_weight
        return dict(
            loss_rambo_map=scale * self.map_weight *
            (zero if per_class is None else per_class.loss),
            loss_rambo_apc=scale * self.apc_weight *
            (zero if across is None else across.loss))

    def _logged(self, per_class: Optional[APLossResult],
                across: Optional[APLossResult], targets: Tensor,
                with_grad: bool) -> Dict[str, Tensor]:
        """``rambo_ap`` and, when the ranker knows the gradient, the push
        directions of the current scores."""
        out = {}
        n, num_classes = targets.shape
        if per_class is None:
            return out
        num_valid = per_class.valid.sum()
        on_host = reads_are_free(targets)
        if not on_host or num_valid:
            # the AP of a row without a positive is 0: a plain sum (NaN
            # on a device when no class has a positive, known there only
            # by a read)
            out['rambo_ap'] = per_class.ap.sum() / num_valid
        if with_grad and n and per_class.grad is not None:
            out.update(
                _push_stats(self.map_weight * per_class.grad[:, :n].t(),
                            self.apc_weight *
                            across.grad.reshape(n, num_classes), targets,
                            on_host))
        return out


def _push_stats(map_grad: Tensor, apc_grad: Tensor, positives: Tensor,
                on_host: bool) -> Dict[str, Tensor]:
    """The push directions of ``map_grad + apc_grad`` by exact counts.

    Args:
        map_grad (Tensor): Weighted ``L_mAP`` gradient (N, C), any layout.
        apc_grad (Tensor): Weighted ``L_APC`` gradient (N, C).
        positives (Tensor): Bool (N, C).
        on_host (bool): On the CPU a share of nothing is left out; elsewhere
            it is NaN (0 / 0), as knowing it would be a read.

    Returns:
        dict[str, Tensor]: ``rambo_grad_density``, ``rambo_pos_grad_frac``
        and ``rambo_neg_grad_frac`` (fp32).
    """
    grad = apc_grad + map_grad
    up = grad > 0
    num_pos = torch.count_nonzero(positives)
    counts = torch.stack([
        torch.count_nonzero(grad),
        torch.count_nonzero((grad < 0) & positives),
        torch.count_nonzero(up) - torch.count_nonzero(up & positives)])
    total = grad.numel()
    # full_like, not new_tensor: no copy of host memory to the device
    shares = counts.to(torch.float32) / torch.stack(
        [torch.full_like(num_pos, total), num_pos, total - num_pos])
    stats = dict(rambo_grad_density=shares[0])
    known = int(num_pos) if on_host else None
    if known is None or known:
        stats['rambo_pos_grad_frac'] = shares[1]
    if known is None or known < total:
        stats['rambo_neg_grad_frac'] = shares[2]
    return stats
