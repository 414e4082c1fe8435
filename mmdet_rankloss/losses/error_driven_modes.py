"""The positives' errors of each error-driven mode (``P x P``, vectorised).

Each function takes the positives' relations ``h_pp[i, k] = H(x_ik)``
(``P x P``) with the self relation ``r`` on the diagonal (AP Loss and aLRP:
1; Rank & Sort: ``self_relation``) and ``N_FP(i)`` (from
:class:`~.error_driven_negatives.SortedNegatives`) and returns
:class:`PositiveErrors`, per positive and not yet divided by ``|P|``, in the
dtype of its inputs (the working precision). The formulas, the options and
their measured effect are in :mod:`.error_driven`; the gates below are the
authors'. Every function is a fixed number of kernels and reads nothing
back.
"""
from typing import NamedTuple, Optional

import torch
from torch import Tensor

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
        sorting (Tensor, optional): 'rs': ``l_S(i) - l*_S(i)``; else None.
        loc (Tensor, optional): 'alrp': the localisation term of ``i`` (the
            component is their mean); else None.
        loc_weight (Tensor, optional): 'alrp': ``|P| d loc / d e_k``; else
            None.
        pos_loss (Tensor): Minus the positive's own update, times
            ``|P|``.
        to_negatives (Tensor): ``w_i``: negative ``j`` gets ``w_i H(x_ij) /
            |P|`` from positive ``i``.
    """
    ranking: Tensor
    sorting: Optional[Tensor]
    loc: Optional[Tensor]
    loc_weight: Optional[Tensor]
    pos_loss: Tensor
    to_negatives: Tensor


def ap_errors(h_pp: Tensor, nfp: Tensor) -> PositiveErrors:
    """'ap': ``rank(i) = 1 + sum_{k != i} H(x_ik) + N_FP(i)``, ranking
    error only, distributed whenever ``N_FP(i) > 0`` (no gate).

    Args:
        h_pp (Tensor): (P, P) relations, diagonal 1.
        nfp (Tensor): (P,) ``N_FP``.
    """
    rank = h_pp.sum(1) + nfp
    ranking = nfp / rank
    return PositiveErrors(ranking, None, None, None, ranking,
                          rank.reciprocal())


def rank_sort_errors(h_pp: Tensor, nfp: Tensor,
                     y: Tensor) -> PositiveErrors:
    """'rs': ranking and sorting errors with self relation ``r``.

    ``rank+(i) = r + sum_{k != i} H(x_ik)``, ``rank(i) = rank+(i) +
    N_FP(i)``; ``l_S(i) = (r (1 - y_i) + sum_{k != i} H(x_ik) (1 - y_k)) /
    rank+(i)``, ``l*_S(i)`` the same over ``k`` with ``y_k >= y_i`` (self
    included with ``r``). The sorting error (not clamped: it is >= 0 since
    the left-out positives have the larger errors ``1 - y_k``) goes to the
    positives with ``y_k < y_i``, pmf ``H(x_ik)``.

    Args:
        h_pp (Tensor): (P, P) relations, diagonal ``r`` in (0, 1].
        nfp (Tensor): (P,) ``N_FP``.
        y (Tensor): (P,) labels in [0, 1].
    """
    err = 1 - y
    higher = h_pp * (y[None, :] >= y[:, None])  # diagonal r
    lower = h_pp - higher  # diagonal 0
    rank_plus = h_pp.sum(1)
    rank = rank_plus + nfp
    ranking = nfp / rank
    ranked = nfp > RS_GATE
    # (the gates as factors: every value they multiply is finite)
    to_negatives = ranked / rank  # 1 / rank(i) or 0
    sorting = (h_pp @ err) / rank_plus - (higher @ err) / higher.sum(1)
    mass = lower.sum(1)
    sorted_out = mass > RS_GATE
    coef = sorting / mass.clamp(min=RS_GATE) * sorted_out
    pos_loss = torch.addmv(torch.addcmul(ranking * ranked, sorting,
                                         sorted_out), lower.t(), coef,
                           alpha=-1)
    return PositiveErrors(ranking, sorting, None, None, pos_loss,
                          to_negatives)


def alrp_errors(diff: Tensor, h_pp: Tensor, nfp: Tensor, e: Tensor,
                own_loc_in_update: bool, loc_order: str) -> PositiveErrors:
    """'alrp': classification update and localisation component.

    ``rank(i) = 1 + sum_{k != i} H(x_ik) + N_FP(i)``. If ``N_FP(i) >``
    :data:`ALRP_GATE`, positive ``i`` distributes ``(N_FP(i) + sum_{k !=
    i} H(x_ik) e_k [+ e_i]) / rank(i)`` (``e_i`` with
    ``own_loc_in_update``) over the negatives, pmf ``H(x_ij) / N_FP(i)``.
    Localisation term of ``i``: ``E(i) / rank(i)`` with ``E(i)`` the sum of
    ``e_k`` over the positives at or above ``i`` in the hard order (score
    descending, ties by index: lower index above), ``'hard'``, or ``e_i +
    sum_{k != i} H(x_ik) e_k``, ``'smoothed'``; ranks fixed. Both are a
    ``P x P`` matrix product (the hard order as a comparison matrix).

    Args:
        diff (Tensor): (P, P) ``u_k - u_i`` of the positives' scores
            ``u``, working precision (its sign is that of ``u_k - u_i``).
        h_pp (Tensor): (P, P) relations, diagonal 1.
        nfp (Tensor): (P,) ``N_FP``.
        e (Tensor): (P,) localisation errors, >= 0.
        own_loc_in_update (bool): Include ``e_i`` in ``i``'s update.
        loc_order (str): ``'hard'`` or ``'smoothed'``.
    """
    inv_rank = (h_pp.sum(1) + nfp).reciprocal()
    if loc_order == 'hard':
        # at_or_above[i, k]: k is at or above i in the hard order, 1 if
        # u_k > u_i, 0 if u_k < u_i, k <= i on a tie
        at_or_above = torch.heaviside(diff, torch.ones_like(diff).tril_())
    else:  # E(i) = e_i + sum_{k != i} H(x_ik) e_k
        at_or_above = h_pp
    loc = (at_or_above @ e) * inv_rank
    loc_weight = at_or_above.t() @ inv_rank
    # N_FP(i) + sum_{k != i} H(x_ik) e_k [+ e_i] (h_pp @ e has e_i once)
    amount = torch.addmv(nfp if own_loc_in_update else nfp - e, h_pp, e)
    amount = amount * inv_rank * (nfp > ALRP_GATE)
    return PositiveErrors(nfp * inv_rank, None, loc, loc_weight, amount,
                          amount / nfp.clamp(min=ALRP_GATE))
