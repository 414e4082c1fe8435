"""``1 - AP`` of rows of scores: the functional core of the AP losses.

Paper: Rolinek et al., "Optimizing Rank-based Metrics with Blackbox
Differentiation", CVPR 2020, https://arxiv.org/abs/1912.03500, Eq. 14 and
21-22.

For every positive, precision is its rank among the positives divided by
its rank among all elements, both on the scores shifted by the margin of
Eq. 14 (positives ``- margin / 2``, negatives ``+ margin / 2``); AP is the
mean precision of a row's positives. :func:`ap_of_rows` is the one entry
point: it flattens the rows, leaves out those without a positive, shifts by
the margin and hands the rows to a back-end (``rows_fn``) that gives the
ranks a gradient. :func:`blackbox_ap_rows` is the back-end of the paper
(Algorithm 1); :class:`~mmdet_rankloss.losses.ap_rankers.BlackboxRanker`
and :func:`average_precision_loss` both call it, so the functional form
builds no module.

Host reads (each a wait for the device on a GPU): a call of
:func:`ap_of_rows` reads the positives' places (one ``nonzero``), and the
blackbox back-end adds at most two (the widest row of positives, when
there are more positives than columns, and whether a perturbed score ties
an old one); :func:`blackbox_ap_columns_and_flat` finds both rankings'
positives with one read.
"""
from functools import partial
from typing import Callable, NamedTuple, Optional, Tuple

import torch
from torch import Tensor

from ..ops.checks import check_flag, check_positive
from ..ops.ranking import (blackbox_rank_loss, exact_rank, margin_shift,
                           rank_dtype, subset_rank_at)
from ..ops.stable_order import column_orders, descending_order
from .utils import check_reduction, check_scores_and_masks, zero_loss

__all__ = [
    'APLossResult', 'ap_of_rows', 'blackbox_ap_rows',
    'blackbox_ap_columns_and_flat', 'exact_ap', 'average_precision_loss'
]


class APLossResult(NamedTuple):
    """What an AP back-end computes for rows of scores."""
    loss: Tensor  # scalar, differentiable
    ap: Tensor  # (R,) detached exact AP per row (0 for rows without positives)
    valid: Tensor  # (R,) bool, rows that have a positive
    grad: Optional[Tensor]  # (R, n) score gradient at unit scale (blackbox)
    # number of positives, known on the host (set by ap_of_rows)
    num_positives: Optional[int] = None


def row_mean(values: Tensor, row_of: Tensor, col_of: Tensor, width: int,
             num_pos: Tensor) -> Tensor:
    """Mean per row of values given at the positives of a (rows, width)
    table (``(row_of, col_of)`` their places, each once, ``num_pos`` the
    count per row); 0 for rows without any.

    Summed as a dense table and a row sum, a reduction in a fixed order:
    the same bits in every run on CUDA, where ``index_add`` adds with
    atomics (its last bits vary between runs unless
    ``torch.use_deterministic_algorithms(True)``)."""
    table = values.new_zeros(num_pos.shape[0], width).index_put(
        (row_of, col_of), values)
    return table.sum(1) / num_pos.clamp(min=1)


def exact_ap(shifted: Tensor, row_of: Tensor, col_of: Tensor,
             num_pos: Tensor) -> Tensor:
    """Exact AP (Eq. 21-22) of each row of scores (R, n) from its positives
    at ``(row_of, col_of)``; 0 for rows without positives."""
    with torch.no_grad():
        precision = subset_rank_at(shifted, row_of, col_of,
                                   num_pos) / exact_rank(shifted)[row_of,
                                                                  col_of]
        return row_mean(precision, row_of, col_of, shifted.shape[-1],
                        num_pos)


def reduce_rows(ap: Tensor, valid: Tensor, reduction: str) -> Tensor:
    """``1 - AP`` of the valid rows, averaged or summed (masked, not
    selected: no read from the device)."""
    total = torch.where(valid, 1 - ap, torch.zeros_like(ap)).sum()
    if reduction == 'sum':
        return total
    return total / valid.sum().clamp(min=1).to(total.dtype)


def ap_of_rows(scores: Tensor,
               positives: Tensor,
               margin: float,
               reduction: str,
               with_grad: bool,
               rows_fn: Callable[..., APLossResult],
               knows_grad: bool = False,
               at_positives: Optional[Tuple[Tensor, Tensor]] = None
               ) -> APLossResult:
    """``1 - AP`` of each row (along the last dim), reduced over valid rows.

    Args:
        scores (Tensor): Validated, finite scores (..., n).
        positives (Tensor): Bool (or 0/1) of the scores' shape.
        margin (float): Margin alpha of Eq. 14, >= 0.
        reduction (str): ``'mean'`` or ``'sum'`` over rows with a positive.
        with_grad (bool): Also return the score gradient at unit scale, if
            the back-end knows it in forward (``knows_grad``).
        rows_fn (callable): The back-end, called as ``rows_fn(shifted,
            positives, (row_of, col_of), num_pos, valid, reduction,
            with_grad)`` on (R, n) rows that include at least one positive.
        knows_grad (bool): Whether ``rows_fn`` returns a gradient.
        at_positives (tuple[Tensor, Tensor], optional): ``nonzero`` of the
            positives as (R, n) rows, when the caller has it. Defaults to
            None (read here: the one host read of this function).

    Returns:
        APLossResult: Loss, detached exact AP and valid flag per row (of
        the leading shape) and the gradient (or None).
    """
    lead, n = scores.shape[:-1], scores.shape[-1]
    scores = scores.reshape(-1, n)
    positives = positives.bool().reshape(-1, n)
    num_pos = torch.count_nonzero(positives, dim=-1)
    valid = num_pos > 0
    if at_positives is None:
        at_positives = positives.nonzero(as_tuple=True)
    if at_positives[0].numel() == 0:  # no row has a positive
        zero = zero_loss(scores)
        grad = torch.zeros_like(scores, dtype=rank_dtype(
            scores.dtype)) if with_grad and knows_grad else None
        out = APLossResult(zero, zero.new_zeros(valid.shape).detach(), valid,
                           grad)
    else:
        # margin 0 shifts nothing (it would only turn -0.0 into +0.0, which
        # every ranking here treats as equal): skip two passes
        shifted = margin_shift(scores, positives, margin) if margin else \
            scores.to(rank_dtype(scores.dtype))
        out = rows_fn(shifted, positives, at_positives, num_pos, valid,
                      reduction, with_grad)
    return APLossResult(
        out.loss, out.ap.reshape(lead), out.valid.reshape(lead),
        None if out.grad is None else out.grad.reshape(lead + (n, )),
        at_positives[0].numel())


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


def average_precision_loss(scores: Tensor,
                           labels: Tensor,
                           lambda_val: float = 0.5,
                           margin: float = 0.0,
                           normalize_ranks: bool = True,
                           reduction: str = 'mean',
                           positive_rank_grad: bool = False) -> Tensor:
    """``1 - AP`` of each row of scores, differentiated by blackbox ranking.

    Ties are ranked by index (see
    :func:`~mmdet_rankloss.ops.ranking.exact_rank`). Rows without a
    positive have no AP and are left out (never NaN); when no row has one
    the result is a zero that keeps the graph.

    Args:
        scores (Tensor): Scores of shape (..., n), one ranking per row.
            Any floating dtype; fp16/bf16 are shifted and ranked in fp32.
        labels (Tensor): Binary relevance of the scores' shape (bool or 0/1).
        lambda_val (float): Algorithm 1's interpolation strength, > 0.
            Defaults to 0.5 (the paper's detection setting).
        margin (float): Margin alpha of Eq. 14, >= 0. Defaults to 0.0.
        normalize_ranks (bool): Rank as fractions ``rank / n``. The value
            is the same (precision is a ratio of ranks), but Algorithm 1
            then acts as ``lambda * n`` on integer ranks: without it a
            ranking of thousands of elements gets almost no gradient at
            lambda = 0.5 (``docs/detection.md``). Defaults to True.
        reduction (str): ``'mean'`` or ``'sum'`` of ``1 - AP`` over the rows
            that have a positive. Defaults to ``'mean'``.
        positive_rank_grad (bool): Also differentiate the rank among the
            positives (Eq. 21's numerator) by Algorithm 1. The value is the
            same. Off by default: AP does not change when two positives
            swap, but the two rankers are perturbed in opposite directions
            and the second pushes the best-ranked positives down (measured
            by ``tools/analysis_tools/score_space_density.py``;
            ``docs/detection.md``). Defaults to False.

    Returns:
        Tensor: Scalar loss (fp32, fp64 for fp64 scores).

    Raises:
        ValueError: On bad shapes, non-binary labels, NaN/inf scores,
            lambda <= 0, margin < 0 or an unknown reduction.

    Example:
        >>> scores = torch.tensor([[0.9, 0.2, 0.6, 0.1]], requires_grad=True)
        >>> labels = torch.tensor([[1, 0, 0, 1]])
        >>> loss = average_precision_loss(scores, labels)
        >>> round(loss.item(), 4)  # AP = (1/1 + 2/4) / 2
        0.25
    """
    owner = 'average_precision_loss'
    check_scores_and_masks(owner, scores, dict(labels=labels))
    margin = check_positive(owner, 'margin', margin, allow_zero=True)
    check_reduction(owner, reduction)
    rows_fn = partial(
        blackbox_ap_rows,
        lambda_val=check_positive(owner, 'lambda_val', lambda_val),
        normalize_ranks=check_flag(owner, 'normalize_ranks', normalize_ranks),
        positive_rank_grad=check_flag(owner, 'positive_rank_grad',
                                      positive_rank_grad))
    return ap_of_rows(scores, labels, margin, reduction, False, rows_fn).loss
