"""Rank & Sort Loss (Oksuz et al., ICCV 2021) and AP Loss's error-driven
update (Chen et al., CVPR 2019), for a detection head's ``loss_cls``.

Both are the shared core of :mod:`.error_driven` in one mode: ``'rs'``
ranks every positive above every negative (ranking error ``N_FP(i) /
rank(i)``) and sorts the positives by their continuous labels (the IoU of
their predicted box, sorting error minus its target); ``'ap'`` is the
ranking error alone, ``1 - AP`` with the smoothed step. Values, updates and
the cost are documented in :mod:`.error_driven` and ``docs/losses.md``.
:func:`rank_sort_loss` and :func:`error_driven_ap_loss` are the functional
forms: one ranking of scores of any shape, given the positives.
"""
from typing import Dict, Optional

import torch
from torch import Tensor

from ..ops.checks import check_flag
from ..optional_mmdet import MODELS
from .error_driven import (check_self_relation, error_driven_inputs,
                           error_driven_loss)
from .error_driven_head import ErrorDrivenDetectionLoss

__all__ = ['rank_sort_loss', 'RankSortLoss', 'error_driven_ap_loss',
           'ErrorDrivenAPLoss']


def rank_sort_loss(scores: Tensor,
                   positives: Tensor,
                   quality: Optional[Tensor] = None,
                   delta: float = 0.5,
                   self_relation: float = 0.5,
                   negatives: Optional[Tensor] = None,
                   precision: str = 'float64') -> Tensor:
    """Rank & Sort Loss of one ranking of all ``scores``, trained by the
    paper's identity update (the backward is that update, not the
    derivative of the value): :class:`RankSortLoss` on given positives.

    Args:
        scores (Tensor): Scores (...), e.g. the (N, C) logits of a dense
            head, finite; all of them are one ranking.
        positives (Tensor): Binary (...), the scores' shape. (The module
            makes a positive of quality 0 a negative,
            ``zero_quality_as_negative``; here the caller chooses.)
        quality (Tensor, optional): The positives' continuous labels (the
            IoU of their boxes), the scores' shape, in [0, 1] at the
            positives; detached. Defaults to None: 1 (no sorting error).
        delta (float): Half-width of the smoothed step, > 0. Defaults to
            0.5 (paper).
        self_relation (float): A positive's relation to itself, in (0, 1].
            Defaults to 0.5 (authors).
        negatives (Tensor, optional): Binary (...); scores that are
            neither positive nor negative take no part. Defaults to None:
            every score that is not a positive.
        precision (str): The core's dtype, ``'float64'`` or ``'float32'``.
            Defaults to ``'float64'``.

    Returns:
        Tensor: Scalar ``L_RS`` (fp32, fp64 for fp64 scores); 0 in the
        graph without positives.
    """
    flat, pos_idx, negs, quality = error_driven_inputs(
        'rank_sort_loss', scores, positives, negatives, delta, 'quality',
        quality)
    return error_driven_loss(
        flat, pos_idx, delta, 'rs', negs,
        None if quality is None else quality.detach(),
        self_relation=self_relation, precision=precision)[0]


def error_driven_ap_loss(scores: Tensor,
                         positives: Tensor,
                         delta: float = 1.0,
                         negatives: Optional[Tensor] = None,
                         precision: str = 'float64') -> Tensor:
    """AP Loss (``1 - AP`` with the smoothed step) of one ranking of all
    ``scores``, trained by its error-driven update: :class:`ErrorDrivenAPLoss`
    on given positives.

    Args:
        scores (Tensor): Scores (...), finite; one ranking.
        positives (Tensor): Binary (...), the scores' shape.
        delta (float): Half-width of the smoothed step, > 0. Defaults to
            1.0 (paper).
        negatives (Tensor, optional): See :func:`rank_sort_loss`.
        precision (str): See :func:`rank_sort_loss`.

    Returns:
        Tensor: Scalar ``1 - AP`` (fp32, fp64 for fp64 scores).
    """
    flat, pos_idx, negs, _ = error_driven_inputs(
        'error_driven_ap_loss', scores, positives, negatives, delta)
    return error_driven_loss(flat, pos_idx, delta, 'ap', negs,
                             precision=precision)[0]


@MODELS.register_module()
class RankSortLoss(ErrorDrivenDetectionLoss):
    """Rank & Sort Loss over all (anchor, class) scores of a batch.

    ``L_RS = 1/|P| sum_{i in P} (l_R(i) + l_S(i) - l*_S(i))`` with the
    identity update of the paper (:mod:`.error_driven`, mode ``'rs'``). The
    positives' labels are ``quality`` (the IoU of each positive's predicted
    box with its ground truth, detached, given by the head); without it
    every positive has label 1 and the sorting error is 0. The defaults
    follow the authors' code.

    Called as :meth:`~.error_driven_head.ErrorDrivenDetectionLoss.forward`
    with ``quality=`` (N,) labels in [0, 1], read at the positive rows.
    Returns the scalar ``L_RS`` (times ``loss_weight``); with
    ``log_diagnostics=True`` the dict of
    :meth:`~.error_driven_head.ErrorDrivenDetectionLoss.terms`:
    ``loss_rank_sort`` (that value) and the logged ``rs_ranking`` and
    ``rs_sorting``, the two parts of the value.

    Args:
        delta (float): Half-width of the smoothed step in logit units, > 0.
            Defaults to 0.5 (paper).
        score_space (str): Defaults to ``'logits'``.
        loss_weight (float): Defaults to 1.0.
        precision (str): The core's dtype, ``'float64'`` or ``'float32'``
            (:class:`~.error_driven_head.ErrorDrivenDetectionLoss`).
            Defaults to ``'float64'``.
        self_relation (float): A positive's relation to itself in its ranks
            and sorting errors, in (0, 1]. Defaults to 0.5 (authors: ``H(0)``);
            1.0 counts it once (the earlier behaviour: smaller ranking
            errors, see :mod:`.error_driven` for the measured effect).
        zero_quality_as_negative (bool): With ``quality``, a positive whose
            label is exactly 0 (its box does not overlap its ground truth)
            is ranked as a negative of its class and gets a negative's
            update, as in the authors' code (positives: label > 0).
            Defaults to True; False keeps it a positive with label 0 (the
            earlier behaviour: pushed up by the ranking error, down by the
            sorting error). On the case measured in :mod:`.error_driven`
            with 3 of the 20 labels set to 0, False changes the value by
            +5.7 % (-20 % with the positives raised by 3) and the update by
            31 % (28 %) of its largest entry.
        log_diagnostics (bool): Return the dict (``loss_rank_sort`` and the
            diagnostics) instead of the scalar loss. Defaults to False.
    """
    mode = 'rs'
    per_anchor_input = 'quality'

    def __init__(self, delta: float = 0.5,
                 score_space: str = 'logits', loss_weight: float = 1.0,
                 self_relation: float = 0.5,
                 zero_quality_as_negative: bool = True,
                 precision: str = 'float64',
                 log_diagnostics: bool = False) -> None:
        super().__init__(delta, score_space, loss_weight, precision,
                         log_diagnostics)
        owner = type(self).__name__
        self.self_relation = check_self_relation(owner, self_relation)
        self.zero_quality_as_negative = check_flag(
            owner, 'zero_quality_as_negative', zero_quality_as_negative)

    def extra_repr(self) -> str:
        return (f'{super().extra_repr()}, self_relation={self.self_relation}'
                f', zero_quality_as_negative={self.zero_quality_as_negative}')

    def _core_options(self) -> dict:
        return dict(self_relation=self.self_relation)

    def _positive_rows(self, rows: Tensor,
                       quality: Optional[Tensor]) -> Tensor:
        if quality is None or not self.zero_quality_as_negative:
            return rows
        # label != 0: one kernel, and a label out of [0, 1] (NaN included)
        # stays a positive, where the check of the labels sees it
        return torch.logical_and(rows, quality)

    def _outputs(self, loss, parts, loc_weight,
                 loc_error) -> Dict[str, Tensor]:
        return dict(loss_rank_sort=self._weighted(loss),
                    rs_ranking=parts[0], rs_sorting=parts[1])


@MODELS.register_module()
class ErrorDrivenAPLoss(ErrorDrivenDetectionLoss):
    """AP Loss (Chen et al., CVPR 2019): ``1 - AP`` of all (anchor, class)
    scores with the smoothed step, trained by the error-driven update
    (:mod:`.error_driven`, mode ``'ap'``: Rank & Sort Loss with
    ``self_relation=1.0`` and no labels). The paper's minibatch training
    and its interval function (the smoothed step with ``delta = 1``) are
    here; its "minibatch training" memory of several batches is not.

    Returns the scalar ``1 - AP`` (times ``loss_weight``); with
    ``log_diagnostics=True`` the dict ``loss_ap`` (it has no diagnostics).

    Args:
        delta (float): Half-width of the smoothed step, > 0. Defaults to
            1.0 (paper).
        score_space (str): Defaults to ``'logits'``.
        loss_weight (float): Defaults to 1.0.
        precision (str): The core's dtype, ``'float64'`` or ``'float32'``
            (:class:`~.error_driven_head.ErrorDrivenDetectionLoss`).
            Defaults to ``'float64'``.
        log_diagnostics (bool): Return the dict ``loss_ap`` instead of the
            scalar loss. Defaults to False.
    """
    mode = 'ap'

    def __init__(self, delta: float = 1.0, score_space: str = 'logits',
                 loss_weight: float = 1.0,
                 precision: str = 'float64',
                 log_diagnostics: bool = False) -> None:
        super().__init__(delta, score_space, loss_weight, precision,
                         log_diagnostics)

    def _outputs(self, loss, parts, loc_weight,
                 loc_error) -> Dict[str, Tensor]:
        return dict(loss_ap=self._weighted(loss))
