"""Helpers shared by the peer rank losses (FastAP, SRT, SoDeep, AUC, triplet).

The in-batch retrieval problem itself (cosine scores, positives, the
self-column excluded) comes from :func:`.pairwise.retrieval_pairs`; this
module adds what several losses need on top of it: negatives, distances on
the unit sphere, batch-hard mining and hyper-parameter checks.
"""
from typing import NamedTuple

import torch
from torch import Tensor

__all__ = [
    'negatives_of', 'zero_loss', 'sq_distance_from_scores',
    'distance_from_scores', 'HardestPairs', 'hardest_pairs',
    'check_positive', 'check_in_range'
]


def negatives_of(positives: Tensor, valid: Tensor) -> Tensor:
    """Negatives of a retrieval problem: valid pairs of different classes."""
    return valid & ~positives


def zero_loss(embeddings: Tensor) -> Tensor:
    """A zero loss connected to the graph (DDP does not wait for grads that
    never come), in fp32 like every loss value of the package (fp64 input
    stays fp64)."""
    zero = embeddings.sum() * 0
    return zero if zero.dtype == torch.float64 else zero.float()


def sq_distance_from_scores(scores: Tensor) -> Tensor:
    """Squared Euclidean distances of unit vectors from their cosines:
    ``|a - b|^2 = 2 - 2 <a, b>``, clamped to the sphere's range [0, 4]."""
    return (2 - 2 * scores).clamp(0, 4)


def distance_from_scores(scores: Tensor, eps: float = 1e-12) -> Tensor:
    """Euclidean distances of unit vectors from their cosines.

    The square root is taken of ``max(2 - 2 s, eps)``: identical vectors
    (distance 0, e.g. a query and itself or a duplicate image) get a zero
    gradient instead of the infinite one of ``sqrt`` at 0.
    """
    return (2 - 2 * scores).clamp(min=eps, max=4).sqrt()


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


def check_positive(name: str, value, allow_zero: bool = False) -> float:
    """Returns ``float(value)`` or raises ``ValueError`` naming it."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) \
        and (value >= 0 if allow_zero else value > 0) \
        and value != float('inf')
    if not ok:
        bound = '>= 0' if allow_zero else '> 0'
        raise ValueError(f'{name} must be a finite number {bound}, got '
                         f'{value!r}')
    return float(value)


def check_in_range(name: str, value, low: float, high: float) -> float:
    """Returns ``float(value)`` if ``low <= value <= high``, else raises
    ``ValueError`` naming it."""
    if not (isinstance(value, (int, float)) and not isinstance(value, bool)
            and low <= value <= high):
        raise ValueError(
            f'{name} must be a number in [{low}, {high}], got {value!r}')
    return float(value)
