"""Helpers shared by the losses: the reductions, the zero loss that keeps the
graph, negatives, distances on the unit sphere and batch-hard mining (the
retrieval problem: :func:`.pairwise.retrieval_pairs`; parameter checks:
:mod:`mmdet_rankloss.ops.checks`)."""
from typing import Dict, NamedTuple, Optional, Union

import torch
from torch import Tensor

from ..ops.checks import all_finite, check_choice, check_data
from ..ops.ranking import rank_dtype

__all__ = [
    'REDUCTIONS', 'check_reduction', 'check_scores_and_masks', 'zero_loss',
    'negatives_of', 'sq_distance_from_scores', 'distance_from_scores',
    'HardestPairs', 'hardest_pairs', 'loss_total', 'TermsLoss'
]

#: Reductions of a rank loss over its rankings (queries, classes). There is
#: no 'none': a rank loss is a function of a whole ranking, not a sum of
#: per-element terms.
REDUCTIONS = ('mean', 'sum')


def check_reduction(owner: str, reduction, name: str = 'reduction') -> str:
    """One of :data:`REDUCTIONS`; ``'none'`` gets its own explanation."""
    if reduction == 'none':
        raise ValueError(
            f"{owner}: {name}='none' is not supported: a rank loss is a "
            'function of the whole ranking, not a sum of per-element '
            'terms, so there is no per-element loss to return (this is '
            'what OHEMSampler asks for; use a random sampler with rank '
            'losses)')
    return check_choice(owner, name, reduction, REDUCTIONS)


def check_scores_and_masks(owner: str,
                           scores: Tensor,
                           masks: Dict[str, Tensor],
                           shape: str = '(..., n)',
                           allow_empty: bool = False) -> None:
    """Validate rows of scores and binary masks of the same shape: shapes and
    dtypes on the host, finiteness and binariness by
    :func:`~mmdet_rankloss.ops.checks.check_data` (one read on the CPU, device
    assertions elsewhere).

    Args:
        owner (str): Function named in the messages.
        scores (Tensor): Floating point scores; ``shape`` ``'(Q, N)'`` requires
            2 dimensions, else at least one.
        masks (dict[str, Tensor]): Named masks (bool or 0/1) of the scores'
            shape.
        shape (str): ``'(..., n)'`` or ``'(Q, N)'``.
        allow_empty (bool): Accept rows of length 0. Defaults to False.

    Raises:
        ValueError: Naming ``owner`` and the offending argument.
    """
    got = tuple(scores.shape) if isinstance(scores, Tensor) else type(scores)
    if not isinstance(scores, Tensor) or not scores.is_floating_point() or \
            scores.dim() == 0 or (shape == '(Q, N)' and scores.dim() != 2):
        raise ValueError(f'{owner}: scores must be a floating point tensor '
                         f'of shape {shape}, got {got}')
    if not allow_empty and scores.shape[-1] == 0:
        raise ValueError(f'{owner}: scores must have shape {shape} with '
                         f'n > 0, got {got}')
    conditions = []
    for name, mask in masks.items():
        if not isinstance(mask, Tensor) or mask.shape != scores.shape:
            raise ValueError(
                f'{owner}: {name} must be a tensor of the scores shape '
                f'{got}, got '
                f'{tuple(mask.shape) if isinstance(mask, Tensor) else mask}')
        if mask.dtype != torch.bool:
            conditions.append((((mask == 0) | (mask == 1)).all(),
                               f'{name} must be binary (0/1 or bool)'))
    conditions.append((all_finite(scores), 'scores contain NaN or inf'))
    check_data(owner, conditions)


def negatives_of(positives: Tensor, valid: Tensor) -> Tensor:
    """Negatives of a retrieval problem: valid pairs of different classes."""
    return valid & ~positives


def zero_loss(inputs: Tensor) -> Tensor:
    """The loss of a batch with nothing to rank: a zero in the graph of
    ``inputs`` (DDP waits for every gradient), fp32 (fp64 stays fp64). Zeros
    are summed after the cast to fp32, never the fp16 inputs: their sum, or a
    GradScaler's scale cast to fp16, would overflow and make ``inf * 0 = NaN``.
    """
    dtype = torch.float64 if inputs.dtype == torch.float64 else torch.float32
    return (inputs.to(dtype) * 0).sum()


def loss_total(terms: Dict[str, Tensor]) -> Tensor:
    """The sum of a loss dict's terms, its keys with ``loss`` in order (what
    MMEngine adds to the total); a single term is returned as it is."""
    values = [value for key, value in terms.items() if 'loss' in key]
    if not values:
        raise ValueError(f'no loss term among {sorted(terms)}')
    total = values[0]
    for value in values[1:]:
        total = total + value
    return total


class TermsLoss:
    """The ``forward`` of a detection loss with ``terms(cls_score, labels,
    weight, avg_factor, reduction_override, diagnostics, **per_anchor)``: the
    scalar :func:`loss_total`, or with ``self.log_diagnostics`` the dict."""

    def forward(self, cls_score: Tensor, labels: Tensor,
                weight: Optional[Tensor] = None,
                avg_factor: Optional[float] = None,
                reduction_override: Optional[str] = None,
                **per_anchor: Optional[Tensor]
                ) -> Union[Tensor, Dict[str, Tensor]]:
        """The loss of one batch (arguments: as ``terms``).

        Returns:
            Tensor | dict[str, Tensor]: The scalar sum of the loss terms,
            or (with ``log_diagnostics``) the dict of ``terms``.
        """
        terms = self.terms(cls_score, labels, weight, avg_factor,
                           reduction_override, self.log_diagnostics,
                           **per_anchor)
        return terms if self.log_diagnostics else loss_total(terms)


def sq_distance_from_scores(scores: Tensor) -> Tensor:
    """Squared Euclidean distances of unit vectors from their cosines:
    ``|a - b|^2 = 2 - 2 <a, b>``, clamped to the sphere's range [0, 4], in
    :func:`~mmdet_rankloss.ops.ranking.rank_dtype` (at least fp32)."""
    return (2 - 2 * scores.to(rank_dtype(scores.dtype))).clamp(0, 4)


def distance_from_scores(scores: Tensor, eps: float = 1e-12) -> Tensor:
    """Euclidean distances of unit vectors from their cosines, ``sqrt(max(2 - 2
    s, eps))`` in :func:`~mmdet_rankloss.ops.ranking.rank_dtype` (``eps`` is 0
    in fp16): identical vectors get a finite derivative, so a masked zero
    upstream gives 0, not ``inf * 0 = NaN``."""
    work = scores.to(rank_dtype(scores.dtype))
    return (2 - 2 * work).clamp(min=eps, max=4).sqrt()


class HardestPairs(NamedTuple):
    """Batch-hard mining result, one entry per query (row)."""
    positive: Tensor  # (Q,) lowest positive score (0 where none)
    negative: Tensor  # (Q,) highest negative score (0 where none)
    rows: Tensor  # (Q,) bool, rows that have a positive and a negative


def hardest_pairs(scores: Tensor, positives: Tensor,
                  negatives: Tensor) -> HardestPairs:
    """Hardest positive and hardest negative of every query (batch hard).

    The hardest positive is the least similar item of the query's class, the
    hardest negative the most similar item of another class (Hermans et al.
    2017; AUC loss Eq. 9). For distances, pass ``-distances`` as scores.

    Args:
        scores (Tensor): Similarities (Q, N); higher means more similar.
        positives (Tensor): Bool (Q, N), the query's positives.
        negatives (Tensor): Bool (Q, N), the query's negatives.

    Returns:
        HardestPairs: ``positive`` and ``negative`` scores (Q,) and the
        ``rows`` that have both; the scores of other rows are 0 and carry
        no gradient.
    """
    has_pos, has_neg = positives.any(1), negatives.any(1)
    if scores.shape[1] == 0:  # no gallery: no row has either
        zeros = scores.new_zeros(scores.shape[0])
        return HardestPairs(zeros, zeros, has_pos & has_neg)
    inf = torch.finfo(scores.dtype).max
    hard_pos = scores.masked_fill(~positives, inf).min(1).values
    hard_neg = scores.masked_fill(~negatives, -inf).max(1).values
    hard_pos = torch.where(has_pos, hard_pos, torch.zeros_like(hard_pos))
    hard_neg = torch.where(has_neg, hard_neg, torch.zeros_like(hard_neg))
    return HardestPairs(hard_pos, hard_neg, has_pos & has_neg)
