"""The positives' errors of each error-driven mode (``P x P``, vectorised).

Each function takes the positives' relations ``h_pp[i, k] = H(x_ik)``
(``P x P``, zero diagonal: the self relation is added explicitly) and
``N_FP(i)`` (from :class:`~.error_driven_negatives.SortedNegatives`) and
returns :class:`PositiveErrors`, per positive and not yet divided by
``|P|``, in the dtype of its inputs (the working precision). The formulas,
the options and their measured effect are in :mod:`.error_driven`; the
gates below are the authors'. The hard order's sums are
:func:`~.error_driven_negatives.prefix_sums` (deterministic on CUDA).
"""
from typing import NamedTuple

import torch
from torch import Tensor

from ..ops.stable_order import descending_order
from .error_driven_negatives import prefix_sums

__all__ = ['PositiveErrors', 'RS_GATE', 'ALRP_GATE', 'ap_errors',
           'rank_sort_errors', 'alrp_errors']

#: 'rs': a positive distributes its ranking error only if ``N_FP(i) >
#: RS_GATE`` and its sorting error only if the sorting pmf's mass ``> RS_GATE``
RS_GATE = 1e-10
#: 'alrp': a positive distributes its error only if ``N_FP(i) > ALRP_GATE``
ALRP_GATE = 1e-5


class PositiveErrors(NamedTuple):
    """Per-positive terms of one ranking, working precision, shapes (P,).

    Attributes:
        ranking (Tensor): ``N_FP(i) / rank(i)``.
        sorting (Tensor): 'rs': ``l_S(i) - l*_S(i)``; else zeros.
        loc (Tensor): 'alrp': the localisation term of ``i`` (the
            component is their mean); else zeros.
        loc_weight (Tensor): 'alrp': ``|P| d loc / d e_k``; else empty.
        pos_update (Tensor): The positive's own update times ``|P|``.
        to_negatives (Tensor): ``w_i``: negative ``j`` gets ``w_i H(x_ij) /
            |P|`` from positive ``i``.
    """
    ranking: Tensor
    sorting: Tensor
    loc: Tensor
    loc_weight: Tensor
    pos_update: Tensor
    to_negatives: Tensor


def ap_errors(h_pp: Tensor, nfp: Tensor) -> PositiveErrors:
    """'ap': ``rank+(i) = 1 + sum_{k != i} H(x_ik)``, ranking error only,
    distributed whenever ``N_FP(i) > 0`` (no gate).

    Args:
        h_pp (Tensor): (P, P) relations, zero diagonal.
        nfp (Tensor): (P,) ``N_FP``.
    """
    rank = 1 + h_pp.sum(1) + nfp
    ranking = nfp / rank
    zeros = torch.zeros_like(nfp)
    return PositiveErrors(ranking, zeros, zeros, nfp.new_zeros(0), -ranking,
                          1 / rank)


def rank_sort_errors(h_pp: Tensor, nfp: Tensor, y: Tensor,
                     self_relation: float) -> PositiveErrors:
    """'rs': ranking and sorting errors with self relation ``r``.

    ``rank+(i) = r + sum_{k != i} H(x_ik)``, ``rank(i) = rank+(i) +
    N_FP(i)``; ``l_S(i) = (r (1 - y_i) + sum_{k != i} H(x_ik) (1 - y_k)) /
    rank+(i)``, ``l*_S(i)`` the same over ``k`` with ``y_k >= y_i`` (self
    included with ``r``). The sorting error (not clamped: it is >= 0 since
    the left-out positives have the larger errors ``1 - y_k``) goes to the
    positives with ``y_k < y_i``, pmf ``H(x_ik)``.

    Args:
        h_pp (Tensor): (P, P) relations, zero diagonal.
        nfp (Tensor): (P,) ``N_FP``.
        y (Tensor): (P,) labels in [0, 1].
        self_relation (float): ``r`` in (0, 1].
    """
    r = self_relation
    zeros = torch.zeros_like(nfp)
    rank_plus = r + h_pp.sum(1)
    rank = rank_plus + nfp
    ranking = nfp / rank
    ranked = nfp > RS_GATE
    pos_update = -torch.where(ranked, ranking, zeros)
    to_negatives = torch.where(ranked, 1 / rank, zeros)
    err = 1 - y
    current = (r * err + h_pp @ err) / rank_plus
    higher = h_pp * (y[None, :] >= y[:, None])
    target = (r * err + higher @ err) / (r + higher.sum(1))
    sorting = current - target
    lower = h_pp * (y[None, :] < y[:, None])
    mass = lower.sum(1)
    sorted_out = mass > RS_GATE
    coef = torch.where(sorted_out, sorting / mass.clamp(min=RS_GATE), zeros)
    pos_update = pos_update - torch.where(sorted_out, sorting, zeros) + \
        (lower * coef[:, None]).sum(0)
    return PositiveErrors(ranking, sorting, zeros, nfp.new_zeros(0),
                          pos_update, to_negatives)


def alrp_errors(u: Tensor, h_pp: Tensor, nfp: Tensor, e: Tensor,
                own_loc_in_update: bool, loc_order: str) -> PositiveErrors:
    """'alrp': classification update and localisation component.

    ``rank(i) = 1 + sum_{k != i} H(x_ik) + N_FP(i)``. If ``N_FP(i) >``
    :data:`ALRP_GATE`, positive ``i`` distributes ``(N_FP(i) + sum_{k !=
    i} H(x_ik) e_k [+ e_i]) / rank(i)`` (``e_i`` with
    ``own_loc_in_update``) over the negatives, pmf ``H(x_ij) / N_FP(i)``.
    Localisation term of ``i``: ``E(i) / rank(i)`` with ``E(i)`` the sum of
    ``e_k`` over the positives at or above ``i`` in the hard order (score
    descending, ties by index: lower index above), ``'hard'``, or ``e_i +
    sum_{k != i} H(x_ik) e_k``, ``'smoothed'``; ranks fixed.

    Args:
        u (Tensor): (P,) the positives' scores, working precision.
        h_pp (Tensor): (P, P) relations, zero diagonal.
        nfp (Tensor): (P,) ``N_FP``.
        e (Tensor): (P,) localisation errors, >= 0.
        own_loc_in_update (bool): Include ``e_i`` in ``i``'s update.
        loc_order (str): ``'hard'`` or ``'smoothed'``.
    """
    zeros = torch.zeros_like(nfp)
    rank = 1 + h_pp.sum(1) + nfp
    inv_rank = 1 / rank
    others = h_pp @ e
    if loc_order == 'hard':
        order = descending_order(u)[1]
        loc = torch.empty_like(e)
        loc[order] = prefix_sums(e[order]) * inv_rank[order]
        loc_weight = torch.empty_like(e)
        loc_weight[order] = prefix_sums(inv_rank[order].flip(0)).flip(0)
    else:
        loc = (e + others) * inv_rank
        loc_weight = inv_rank + h_pp.t() @ inv_rank
    amount = (nfp + others + (e if own_loc_in_update else 0)) * inv_rank
    gated = nfp > ALRP_GATE
    pos_update = -torch.where(gated, amount, zeros)
    to_negatives = torch.where(gated, amount / nfp.clamp(min=ALRP_GATE),
                               zeros)
    return PositiveErrors(nfp * inv_rank, zeros, loc, loc_weight, pos_update,
                          to_negatives)
