"""The AP back-end before its fixed-shape rewrite, kept as the reference
that :func:`mmdet_rankloss.losses.average_precision.blackbox_ap` must equal
(values and gradients, bit for bit where the arithmetic allows): per-row
selection of the positives (``nonzero``, through the package's
``ap_of_rows``), ranks through
:func:`~mmdet_rankloss.ops.ranking.blackbox_rank_loss` and autograd of
``1 - AP`` in the ranks."""
from functools import partial
from typing import Callable, Optional, Tuple

import torch
from torch import Tensor

from mmdet_rankloss.losses.average_precision import (APLossResult,
                                                     ap_of_rows, reduce_rows,
                                                     row_mean)
from mmdet_rankloss.ops.ranking import blackbox_rank_loss, subset_rank_at
from mmdet_rankloss.ops.stable_order import column_orders, descending_order


def blackbox_ap_rows(shifted: Tensor, positives: Tensor, at_positives,
                     num_pos: Tensor, valid: Tensor, reduction: str,
                     with_grad: bool, lambda_val: float,
                     normalize_ranks: bool,
                     positive_rank_grad: bool,
                     sort: Optional[Callable] = None) -> APLossResult:
    """The Algorithm-1 back-end of :func:`ap_of_rows` (one batched call of
    :func:`~mmdet_rankloss.ops.ranking.blackbox_rank_loss`).

    The loss reads only the positives' ranks, gathered (M values) rather
    than masked full rows, so its graph holds no row-sized tensor but the
    ranks. With ``positive_rank_grad`` the shifted scores are stacked with
    a copy whose negatives are -inf (always last, no gradient): both ranks
    of Eq. 21 come out of one sort and both get Algorithm 1. Otherwise the
    rank among the positives is a constant, from a sort of the positives
    only (the same order as in the full ranking).

    ``sort``, if given, maps ``shifted`` to its
    :func:`~mmdet_rankloss.ops.stable_order.descending_order`, for a caller
    that has it more cheaply than a sort (not with ``positive_rank_grad``).
    """
    if sort is not None and positive_rank_grad:
        raise ValueError('blackbox_ap_rows: sort= ranks the shifted rows; '
                         'positive_rank_grad ranks a stacked copy')
    n = shifted.shape[-1]
    row_of, col_of = at_positives
    # dL/drk is zero but at the positives: Algorithm 1 moves them only
    moved_at = at_positives
    order = None if sort is None else sort(shifted)
    if positive_rank_grad:
        ranked = torch.stack(
            [shifted, shifted.masked_fill(~positives, float('-inf'))])
        rows = shifted.shape[0]
        moved_at = (torch.cat([row_of, row_of + rows]),
                    torch.cat([col_of, col_of]))
    else:
        ranked = shifted
        if order is None:
            fixed_rank_pos = subset_rank_at(shifted, row_of, col_of, num_pos)
        else:  # read off the full order: positives at or above each place
            fixed_rank_pos = _rank_in_subset(
                positives, order[1], shifted.dtype)[row_of, col_of]
        if normalize_ranks:
            fixed_rank_pos = fixed_rank_pos / n
    ap_rows = []

    def loss_from_ranks(ranks: Tensor) -> Tensor:
        if positive_rank_grad:
            rank_all = ranks[0][row_of, col_of]
            rank_pos = ranks[1][row_of, col_of]
        else:
            rank_all, rank_pos = ranks[row_of, col_of], fixed_rank_pos
        # Eq. 21: the ratio is the same for integer and normalised ranks
        ap = row_mean(rank_pos / rank_all, row_of, col_of, n, num_pos)
        ap_rows.append(ap.detach())
        return reduce_rows(ap, valid, reduction)

    out = blackbox_rank_loss(
        ranked,
        loss_from_ranks,
        lambda_val,
        normalize=normalize_ranks,
        return_grad=with_grad,
        validate=False,  # finite scores (callers), lambda checked by them
        sort=order,
        moved_at=moved_at)
    loss, grad = out if with_grad else (out, None)
    if grad is not None and positive_rank_grad:
        # chain rule through stack + masked_fill: both views feed scores
        grad = grad[0] + grad[1].masked_fill(~positives, 0)
    return APLossResult(loss, ap_rows[0] * valid, valid, grad)


def _rank_in_subset(subset: Tensor, order: Tensor,
                    dtype: torch.dtype) -> Tensor:
    """Rank of each element among the ``subset`` elements of its row, from
    the row's full order (ties by index): the subset elements at or above
    its place, counted in integers (one ``cumsum``, exact and
    deterministic), in ``dtype``."""
    in_order = subset.gather(-1, order).to(torch.int32)
    counted = in_order.cumsum(-1, dtype=torch.int32)
    return torch.empty_like(counted).scatter_(-1, order, counted).to(dtype)


def blackbox_ap_columns_and_flat(
        scores: Tensor, positives: Tensor, margin: float, reduction: str,
        with_grad: bool, lambda_val: float,
        normalize_ranks: bool) -> Tuple[APLossResult, APLossResult]:
    """The blackbox ``1 - AP`` of each column of (N, C) scores and of all
    N * C scores as one row, from one sort.

    Equal to :func:`ap_of_rows` with :func:`blackbox_ap_rows` (no
    ``positive_rank_grad``) on ``scores.t()`` and on
    ``scores.reshape(1, -1)``: the RaMBO AP loss's ``L_mAP`` and ``L_APC``
    of a batch. Both rank the same margin-shifted values, so the order of
    every column follows from the order of the flat row
    (:func:`~mmdet_rankloss.ops.stable_order.column_orders`, O(NC)) instead of
    a second sort.

    Args:
        scores (Tensor): Validated, finite scores (N, C), N >= 1.
        positives (Tensor): Bool (N, C).
        margin (float): Margin alpha of Eq. 14, >= 0.
        reduction (str): ``'mean'`` or ``'sum'`` over the columns with a
            positive (the flat row is one row).
        with_grad (bool): Also return the score gradients at unit scale.
        lambda_val (float): Algorithm 1's strength, > 0.
        normalize_ranks (bool): See :func:`average_precision_loss`.

    Returns:
        tuple[APLossResult, APLossResult]: The columns' result (C rows)
        and the flat row's (1 row).
    """
    flat_sort = []

    def sort_flat(shifted: Tensor):
        flat_sort.append(descending_order(shifted.detach()))
        return flat_sort[0]

    def sort_columns(shifted: Tensor):
        if not flat_sort:  # not reached: a column's positive is the row's
            return descending_order(shifted.detach())
        return column_orders(*flat_sort[0], scores.shape[1])

    rows_fn = partial(
        blackbox_ap_rows,
        lambda_val=lambda_val,
        normalize_ranks=normalize_ranks,
        positive_rank_grad=False)
    # the positives of both rankings from one read: the flat places, and
    # the same places by class (a stable sort by class keeps the items in
    # index order within each class, the row-major order of scores.t())
    num_classes = scores.shape[1]
    _, flat_at = positives.reshape(1, -1).nonzero(as_tuple=True)
    item, cls = flat_at // num_classes, flat_at % num_classes
    by_class = torch.sort(cls, stable=True).indices
    flat = ap_of_rows(scores.reshape(1, -1), positives.reshape(1, -1),
                      margin, 'mean', with_grad,
                      partial(rows_fn, sort=sort_flat), True,
                      (torch.zeros_like(flat_at), flat_at))
    columns = ap_of_rows(scores.t(), positives.t(), margin, reduction,
                         with_grad, partial(rows_fn, sort=sort_columns), True,
                         (cls[by_class], item[by_class]))
    return columns, flat


def reference_average_precision_loss(scores: Tensor,
                                     labels: Tensor,
                                     lambda_val: float = 0.5,
                                     margin: float = 0.0,
                                     normalize_ranks: bool = True,
                                     reduction: str = 'mean',
                                     positive_rank_grad: bool = False
                                     ) -> Tensor:
    """The replaced ``average_precision_loss`` (without its checks)."""
    rows_fn = partial(
        blackbox_ap_rows,
        lambda_val=lambda_val,
        normalize_ranks=normalize_ranks,
        positive_rank_grad=positive_rank_grad)
    return ap_of_rows(scores, labels, margin, reduction, False, rows_fn).loss
