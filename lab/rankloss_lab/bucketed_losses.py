"""Bucketed ranking-based losses, a peer for the speed benchmark.

Yavuz, Cam, Dogan, Oksuz et al., *Bucketed Ranking-based Losses for
Efficient Training of Object Detectors*, ECCV 2024: after one sort, the
negatives between two consecutive positives form one bucket, and the
relations are computed positive x bucket, ``O(max(N log N, P^2))``, with
the hard step. Written from that description, not from the authors' code;
with ``delta`` below the smallest gap between scores,
:func:`mmdet_rankloss.losses.error_driven_loss` gives the same value and
update. Modes ``'ap'`` and ``'rs'``: ``docs/losses.md``.
"""
from typing import NamedTuple, Optional

import torch
from torch import Tensor

__all__ = ['MODES', 'PAPER_SECONDS_PER_ITER', 'hard_step', 'Buckets',
           'negative_buckets', 'bucketed_terms', 'bucketed_loss']

MODES = ('ap', 'rs')
#: Below this a positive gives nothing away (as the RS authors' gate).
GATE = 1e-10
#: Training seconds per iteration, unbucketed -> bucketed, as the paper
#: reports them (Yavuz et al., ECCV 2024; their GPU is not named): paper
#: numbers, not measured here.
PAPER_SECONDS_PER_ITER = {
    'RS Faster R-CNN R50': (0.58, 0.19),
    'RS-ATSS R50': (0.44, 0.19),
}


def hard_step(x: Tensor) -> Tensor:
    """``H(x)``: 1 above 0, 1/2 at 0, 0 below (in ``x``'s dtype)."""
    return (torch.sign(x) + 1) / 2


class Buckets(NamedTuple):
    """The negatives grouped by their relation to the positives: ``counts``
    (B,), negatives per bucket, ``B = 2U + 1`` for ``U`` distinct positive
    scores (bucket ``2m + 1``: the negatives tied with the ``m``-th lowest
    positive score; ``2m``: those between it and the next lower one);
    ``relation`` (P, B), ``H(x_ij)`` of positive ``i`` and any negative
    ``j`` of the bucket; ``of_negative`` (N,), each negative's bucket, in
    the order of ``index`` (N,), the negatives' positions in the scores."""
    counts: Tensor
    relation: Tensor
    of_negative: Tensor
    index: Tensor


def negative_buckets(scores: Tensor, negatives: Tensor, u: Tensor) -> Buckets:
    """Sort the negatives (``negatives``: (n,) bool of ``scores``) once and
    cut them at the positives' scores ``u`` (all in the working dtype)."""
    index = negatives.nonzero().squeeze(1)
    neg_sorted, order = torch.sort(scores[index])  # the one sort, ascending
    levels, level_of = torch.unique(u, sorted=True, return_inverse=True)
    lower = torch.searchsorted(neg_sorted, levels, right=False)
    upper = torch.searchsorted(neg_sorted, levels, right=True)
    zero = lower.new_zeros(1)
    ends = torch.cat([zero, torch.stack([lower, upper], 1).flatten(),
                      zero + neg_sorted.numel()])
    counts = ends[1:] - ends[:-1]
    num_buckets = counts.numel()
    tie_bucket = 2 * level_of + 1
    position = torch.arange(num_buckets, device=u.device)
    relation = hard_step((position[None, :] - tie_bucket[:, None]).to(
        u.dtype))
    in_order = torch.repeat_interleave(
        torch.arange(num_buckets, device=u.device), counts,
        output_size=neg_sorted.numel())
    return Buckets(counts.to(u.dtype), relation, in_order, index[order])


def _positive_errors(h_pp: Tensor, nfp: Tensor, mode: str,
                     y: Optional[Tensor], self_relation: float):
    """(value per positive, given to negatives per unit relation,
    positives' own update) of each mode, all times ``|P|``."""
    if mode == 'ap':
        rank = 1 + h_pp.sum(1) + nfp
        ranking = nfp / rank
        return ranking, 1 / rank, -ranking
    r = self_relation
    rank_plus = r + h_pp.sum(1)
    rank = rank_plus + nfp
    ranking = nfp / rank
    gives = nfp > GATE
    zeros = torch.zeros_like(nfp)
    to_negatives = torch.where(gives, 1 / rank, zeros)
    update = -torch.where(gives, ranking, zeros)
    err = 1 - y
    at_or_above = h_pp * (y[None, :] >= y[:, None])
    below = h_pp * (y[None, :] < y[:, None])
    current = (r * err + h_pp @ err) / rank_plus
    target = (r * err + at_or_above @ err) / (r + at_or_above.sum(1))
    sorting = current - target
    mass = below.sum(1)
    sorts = mass > GATE
    share = torch.where(sorts, sorting / mass.clamp(min=GATE), zeros)
    update = update - torch.where(sorts, sorting, zeros) + \
        (below * share[:, None]).sum(0)
    return ranking + sorting, to_negatives, update


def bucketed_terms(scores: Tensor, positives: Tensor, mode: str = 'rs',
                   negatives: Optional[Tensor] = None,
                   quality: Optional[Tensor] = None,
                   self_relation: float = 0.5,
                   dtype: torch.dtype = torch.float64):
    """Value (scalar, ``dtype``, the working dtype) and update ((n,), the
    scores' dtype) of one ranking, bucketed (see the module doc).
    ``positives`` and ``negatives`` (default ``~positives``): disjoint (n,)
    bool masks of the (n,) ``scores``; ``'rs'`` only: ``quality``, (P,)
    labels in [0, 1] of the positives in index order (default ones), and
    ``self_relation``, a positive's relation to itself (0.5: the RS
    authors' ``H(0)``)."""
    if mode not in MODES:
        raise ValueError(f'bucketed_terms: mode must be one of {MODES}, '
                         f'got {mode!r}')
    scores = scores.detach()
    work = scores.to(dtype)
    negatives = ~positives if negatives is None else negatives
    pos_idx = positives.nonzero().squeeze(1)
    grad = torch.zeros_like(scores)
    num_pos = pos_idx.numel()
    if num_pos == 0:
        return work.new_zeros(()), grad
    u = work[pos_idx]
    buckets = negative_buckets(work, negatives, u)
    nfp = buckets.relation @ buckets.counts
    h_pp = hard_step(u[None, :] - u[:, None])
    h_pp.fill_diagonal_(0)
    y = torch.ones_like(u) if quality is None else quality.detach().to(dtype)
    value, to_negatives, update = _positive_errors(h_pp, nfp, mode, y,
                                                   self_relation)
    per_bucket = (to_negatives @ buckets.relation) / num_pos
    grad[buckets.index] = per_bucket[buckets.of_negative].to(grad.dtype)
    grad[pos_idx] = (update / num_pos).to(grad.dtype)
    return value.sum() / num_pos, grad


class BucketedLossFunction(torch.autograd.Function):
    """Forward: the value of :func:`bucketed_terms`; backward: its update
    times the upstream gradient (nothing for the masks and labels)."""

    @staticmethod
    def forward(ctx, scores, positives, mode, negatives, quality,
                self_relation, dtype):
        value, grad = bucketed_terms(scores, positives, mode, negatives,
                                     quality, self_relation, dtype)
        ctx.save_for_backward(grad)
        out = torch.float64 if scores.dtype == torch.float64 \
            else torch.float32
        return value.to(out)

    @staticmethod
    def backward(ctx, grad_value):
        grad, = ctx.saved_tensors
        return (grad * grad_value.to(grad.dtype), ) + (None, ) * 6


def bucketed_loss(scores: Tensor, positives: Tensor, mode: str = 'rs',
                  negatives: Optional[Tensor] = None,
                  quality: Optional[Tensor] = None, self_relation: float = 0.5,
                  dtype: torch.dtype = torch.float64) -> Tensor:
    """:class:`BucketedLossFunction` applied: the value, with the
    error-driven update as its backward. Args: as :func:`bucketed_terms`.
    """
    return BucketedLossFunction.apply(scores, positives, mode, negatives,
                                      quality, self_relation, dtype)
