"""Rank & Sort Loss (Oksuz et al., ICCV 2021) and AP Loss's error-driven update
(Chen et al., CVPR 2019), for a detection head's ``loss_cls``.

Both are :mod:`.error_driven`'s core in one mode: ``'rs'`` ranks the positives
above the negatives and sorts them by their continuous labels, ``'ap'`` is the
ranking error alone (docs/losses.md). :func:`rank_sort_loss` and
:func:`error_driven_ap_loss` are the functional forms: one ranking of scores of
any shape, given the positives."""
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
    """Rank & Sort Loss of one ranking of all ``scores`` (the backward is the
    paper's identity update): :class:`RankSortLoss` on given positives.

    Args:
        scores (Tensor): Finite scores (...), e.g. (N, C) logits; all of them
            are one ranking.
        positives (Tensor): Binary (...), the scores' shape (the caller decides
            about positives of quality 0).
        quality (Tensor, optional): The positives' labels (their boxes' IoU),
            the scores' shape, in [0, 1] at the positives; detached. Defaults
            to None: 1 (no sorting error).
        delta (float): Half-width of the smoothed step, > 0. Defaults to 0.5.
        self_relation (float): A positive's relation to itself, in (0, 1].
            Defaults to 0.5 (authors).
        negatives (Tensor, optional): Binary (...); scores in neither take no
            part. Defaults to None: every score that is not a positive.
        precision (str): The core's dtype, ``'float64'`` or ``'float32'``.
            Defaults to ``'float64'``.

    Returns:
        Tensor: Scalar ``L_RS`` (fp32, fp64 for fp64 scores); 0 in the graph
        without positives.
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

    ``L_RS = 1/|P| sum_{i in P} (l_R(i) + l_S(i) - l*_S(i))``, trained by the
    paper's identity update (:mod:`.error_driven`, mode ``'rs'``); defaults as
    the authors' code. Call it with ``quality=`` (N,), the positives' labels in
    [0, 1] (their boxes' detached IoU; without: 1, no sorting error). Returns
    ``L_RS`` times ``loss_weight``; with ``log_diagnostics`` the dict of
    :meth:`terms`: ``loss_rank_sort`` and its parts ``rs_ranking``,
    ``rs_sorting``.

    Args:
        delta (float): Half-width of the smoothed step in logit units, > 0.
            Defaults to 0.5 (paper).
        score_space (str): Defaults to ``'logits'``.
        loss_weight (float): Defaults to 1.0.
        precision (str): The core's dtype, ``'float64'`` or ``'float32'``.
            Defaults to ``'float64'``.
        self_relation (float): A positive's relation to itself, in (0, 1].
            Defaults to 0.5 (authors: ``H(0)``); 1.0 counts it once
            (docs/losses.md: the effect).
        zero_quality_as_negative (bool): With ``quality``, a positive of label
            exactly 0 is ranked as a negative, as in the authors' code.
            Defaults to True; False keeps it a positive of label 0
            (docs/losses.md: the effect).
        log_diagnostics (bool): Return the dict instead of the scalar loss.
            Defaults to False.
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
    scores with the smoothed step (its interval function, ``delta = 1``),
    trained by the error-driven update (mode ``'ap'``); the paper's memory of
    several batches is not here. Returns ``1 - AP`` times ``loss_weight``; with
    ``log_diagnostics`` the dict ``loss_ap``.

    Args:
        delta (float): Half-width of the smoothed step, > 0. Defaults to 1.0
            (paper).
        score_space (str): Defaults to ``'logits'``.
        loss_weight (float): Defaults to 1.0.
        precision (str): The core's dtype, ``'float64'`` or ``'float32'``.
            Defaults to ``'float64'``.
        log_diagnostics (bool): Return the dict instead of the scalar loss.
            Defaults to False.
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
