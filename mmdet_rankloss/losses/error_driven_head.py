"""The shared body of the registered error-driven detection losses.

:class:`ErrorDrivenDetectionLoss` turns a dense head's classification
output into one ranking of all (anchor, class) scores and calls the core
(:func:`~.error_driven.error_driven_loss`);
:class:`~.rank_sort_loss.RankSortLoss`,
:class:`~.rank_sort_loss.ErrorDrivenAPLoss` and :class:`~.alrp_loss.ALRPLoss`
give its mode, options, per-anchor input and outputs.
"""
from typing import Dict, Optional, Tuple

import torch
from torch import Tensor, nn

from ..ops.checks import check_data, check_flag, check_number, check_positive
from .error_driven import check_precision, error_driven_loss
from .score_space import ClsHooksMixin, ScoreSpace
from .utils import TermsLoss, check_reduction

__all__ = ['ErrorDrivenDetectionLoss']


class ErrorDrivenDetectionLoss(TermsLoss, ClsHooksMixin, nn.Module):
    """Shared body of the registered error-driven detection losses.

    A head's ``(cls_score (N, channels), labels (N,) in 0..C, weight (N,))``
    become one ranking of the N x C scores of the score space ('logits': the
    first C logits, so ``delta`` is in logit units): an anchor's score for its
    label is a positive, every other score of a row with weight > 0 a negative.
    Per-anchor extras (``quality``, ``loc_error``) are read at the positives'
    rows. Subclasses set :attr:`mode`, :attr:`per_anchor_input` and
    ``_outputs``, and may override ``_core_options``, ``_positive_rows`` and
    ``_positive_inputs``. On a device a call reads back once (the positives'
    ``nonzero``); data checks are device assertions there. :meth:`forward`
    returns the scalar sum of the loss terms, or with ``log_diagnostics`` the
    dict of :meth:`terms` (the heads call it).

    Args:
        delta (float): Half-width of the smoothed step, > 0.
        score_space (str): See :class:`~.score_space.ScoreSpace`.
        loss_weight (float): Multiplies value and update, >= 0.
        precision (str): The dtype the core computes in, ``'float64'`` or
            ``'float32'`` (docs/reliability.md); outputs are in the scores'
            dtype either way. Defaults to ``'float64'``.
        log_diagnostics (bool): Return the dict of :meth:`terms` instead of the
            scalar loss. Defaults to False.
    """
    mode = 'ap'
    #: The per-anchor input :meth:`forward` takes by keyword, if any
    #: (``'quality'``, ``'loc_error'``)
    per_anchor_input: Optional[str] = None

    def __init__(self, delta: float,
                 score_space: str = 'logits',
                 loss_weight: float = 1.0,
                 precision: str = 'float64',
                 log_diagnostics: bool = False) -> None:
        super().__init__()
        owner = type(self).__name__
        self.log_diagnostics = check_flag(owner, 'log_diagnostics',
                                          log_diagnostics)
        self.delta = check_positive(owner, 'delta', delta)
        self.space = ScoreSpace(score_space, None, owner)
        self.loss_weight = check_number(owner, 'loss_weight', loss_weight,
                                        low=0)
        self.precision = check_precision(owner, precision)

    @property
    def score_space(self) -> str:
        return self.space.name

    @property
    def calibration(self):
        return None

    @property
    def cls_hooks(self) -> ScoreSpace:
        return self.space

    def extra_repr(self) -> str:
        return (f'delta={self.delta}, score_space={self.score_space!r}, '
                f'loss_weight={self.loss_weight}, '
                f'precision={self.precision!r}')

    def _weighted(self, loss: Tensor) -> Tensor:
        """``loss_weight * loss`` (the default weight 1 launches no
        multiplication, forward or backward)."""
        return loss if self.loss_weight == 1 else self.loss_weight * loss

    def _check_per_anchor(self, name: str, values: Optional[Tensor],
                          n: int) -> None:
        """``values`` checked: None or a float tensor (N,) (its values are
        checked at the positives: :meth:`_check_at_positives`)."""
        if values is not None and (not isinstance(values, Tensor)
                                   or values.shape != (n, )
                                   or not values.is_floating_point()):
            raise ValueError(
                f'{type(self).__name__}: {name} must be a float tensor of '
                f'shape ({n},), got {getattr(values, "shape", values)}')

    def _check_at_positives(self, **values: Optional[Tensor]) -> None:
        """The per-anchor values at the positives (P,) in [0, 1] (one read
        on the CPU, a device-side assertion elsewhere:
        :func:`~mmdet_rankloss.ops.checks.check_data`); NaN and inf fail
        the comparison with their clamped value."""
        check_data(type(self).__name__, [
            (at.clamp(0, 1).eq(at).all(),
             f'{name} must be finite and in [0, 1] at the positives')
            for name, at in values.items() if at is not None])

    def _positive_rows(self, rows: Tensor,
                       quality: Optional[Tensor]) -> Tensor:
        """The rows whose label's score is a positive, bool (N,), from ``rows``
        (label < C and weight > 0) and ``quality`` (N,) (checked afterwards: a
        row whose label is outside [0, 1] must stay a positive); a row left out
        is a negative of its label's score. Here ``rows``."""
        return rows

    def _core_options(self) -> dict:
        """Keyword options of :func:`~.error_driven.error_driven_loss`
        (none here: the core's defaults)."""
        return {}

    def _positive_inputs(
        self, quality: Optional[Tensor], loc_error: Optional[Tensor]
    ) -> Tuple[Optional[Tensor], Optional[Tensor]]:
        """The positives' checked ``quality`` and ``loc_error`` (P,) as the
        core gets them (here unchanged)."""
        return quality, loc_error

    def terms(self, cls_score: Tensor, labels: Tensor,
              weight: Optional[Tensor] = None,
              avg_factor: Optional[float] = None,
              reduction_override: Optional[str] = None,
              diagnostics: Optional[bool] = None,
              **per_anchor: Optional[Tensor]) -> Dict[str, Tensor]:
        """The loss terms of one batch and, on request, the diagnostics.

        Args:
            cls_score (Tensor): (N, C + 1) for 'logits' (background column
                unused), (N, C) for 'sigmoid'.
            labels (Tensor): (N,) in 0..C, C = background.
            weight (Tensor, optional): (N,); rows with weight 0 are left out.
            avg_factor (float, optional): Ignored (normalised by ``|P|``).
            reduction_override (str, optional): 'mean' or 'sum' (equal: one
                ranking); 'none' raises.
            diagnostics (bool, optional): Add the logged values. Defaults to
                None: ``log_diagnostics``.
            **per_anchor (Tensor): :attr:`per_anchor_input` by keyword, if any:
                (N,) values read at the positive rows.

        Returns:
            dict[str, Tensor]: The losses and, with ``diagnostics``, the logged
            values.
        """
        unknown = set(per_anchor) - {self.per_anchor_input}
        if unknown:
            raise TypeError(f'{type(self).__name__}.forward() got unexpected '
                            f'keyword arguments {sorted(unknown)}')
        out = self._outputs(*self._rank(cls_score, labels, weight,
                                        reduction_override, **per_anchor))
        if diagnostics is None:
            diagnostics = self.log_diagnostics
        if diagnostics:
            return out
        return {key: value for key, value in out.items() if 'loss' in key}

    def _outputs(self, loss: Tensor, parts: Tensor, loc_weight: Tensor,
                 loc_error: Optional[Tensor]) -> Dict[str, Tensor]:
        """The dict of :meth:`terms` with the diagnostics from what
        :meth:`_rank` returns (``loss`` is in the graph of ``cls_score``
        even without positives: the core's autograd Function gives it a
        zero update then)."""
        raise NotImplementedError(
            f'{type(self).__name__} subclasses ErrorDrivenDetectionLoss but '
            'does not define _outputs(), which names its returned losses')

    def _rank(self, cls_score: Tensor, labels: Tensor,
              weight: Optional[Tensor], reduction_override: Optional[str],
              quality: Optional[Tensor] = None,
              loc_error: Optional[Tensor] = None):
        """(loss, parts, loc_weight, the positives' loc_error) of the
        batch."""
        owner = type(self).__name__
        if reduction_override is not None:
            # one ranking of the whole batch: 'mean' and 'sum' agree
            check_reduction(owner, reduction_override, 'reduction_override')
        num_classes = self.space.check_inputs(cls_score, labels, weight)
        n = cls_score.shape[0]
        # (N, C), read row-major by the core (no copy)
        scores = self.space.ranked(cls_score, num_classes)
        rows = labels < num_classes
        if weight is not None:
            valid = weight > 0
            rows = rows & valid
        self._check_per_anchor('quality', quality, n)
        self._check_per_anchor('loc_error', loc_error, n)
        rows = self._positive_rows(rows, quality).nonzero().squeeze(1)
        # the one read of the data (it sizes the positives); the rest has
        # fixed shapes. Row-major flat index of each positive score:
        pos_idx = torch.add(labels[rows], rows, alpha=num_classes)
        quality = None if quality is None else quality[rows]
        loc_error = None if loc_error is None else loc_error[rows]
        self._check_at_positives(
            quality=None if quality is None else quality.detach(),
            loc_error=None if loc_error is None else loc_error.detach())
        quality, loc_error = self._positive_inputs(quality, loc_error)
        # the negatives: the valid rows' scores that are not positives
        negatives = None if weight is None else valid[:, None]
        loss, parts, loc_weight = error_driven_loss(
            scores, pos_idx, self.delta, self.mode, negatives,
            quality, None if loc_error is None else loc_error.detach(),
            precision=self.precision, **self._core_options())
        return loss, parts, loc_weight, loc_error
