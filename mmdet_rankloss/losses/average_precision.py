"""``1 - AP`` of rows of scores: the functional core of the AP losses.

Paper: Rolinek et al., "Optimizing Rank-based Metrics with Blackbox
Differentiation", CVPR 2020, https://arxiv.org/abs/1912.03500, Eq. 14 and
21-22.

For every positive, precision is its rank among the positives divided by
its rank among all elements, both on the scores shifted by the margin of
Eq. 14 (positives ``- margin / 2``, negatives ``+ margin / 2``); AP is the
mean precision of a row's positives.

:func:`blackbox_ap` is the paper's back-end (Algorithm 1) and the one the
losses train with: a fixed number of tensor operations on tensors of the
input's shape, no read from the device (rows without a positive are
masked, elements that are not ranked are ``-inf``), so that a GPU runs it
as a handful of kernels. :func:`blackbox_ap_classes` gives the RaMBO AP
loss's two rankings of a batch with it, and :func:`rambo_ap_loss` is its
functional form. :func:`ap_of_rows` serves the other back-ends
(sigmoid soft ranks, a sorter network), which work on the positives'
places (one ``nonzero``, a host read).
"""
from typing import Callable, NamedTuple, Optional, Tuple

import torch
from torch import Tensor

from ..ops.checks import check_flag, check_positive
from ..ops.device import reads_are_free
from ..ops.ranking import (SPARSE_RERANK_MAX_MOVED, exact_rank, margin_shift,
                           rank_dtype, subset_rank_at)
from ..ops.sparse_rerank import rerank_sparse
from ..ops.stable_order import (column_orders, descending_indices,
                                descending_order, ranks_from_order)
from .deprecation import deprecated_alias, renamed_keywords
from .utils import check_reduction, check_scores_and_masks, zero_loss

__all__ = [
    'APLossResult', 'ap_of_rows', 'blackbox_ap', 'blackbox_ap_classes',
    'blackbox_ap_of_rows', 'exact_ap', 'rambo_ap_loss',
    'average_precision_loss',
    'shift_scores'
]


class APLossResult(NamedTuple):
    """What an AP back-end computes for rows of scores."""
    loss: Tensor  # scalar, differentiable
    ap: Tensor  # (R,) detached exact AP per row (0 for rows without positives)
    valid: Tensor  # (R,) bool, rows that have a positive
    grad: Optional[Tensor]  # (R, n) score gradient at unit scale (blackbox)


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
        shifted = shift_scores(scores, positives, margin)
        out = rows_fn(shifted, positives, at_positives, num_pos, valid,
                      reduction, with_grad)
    return APLossResult(
        out.loss, out.ap.reshape(lead), out.valid.reshape(lead),
        None if out.grad is None else out.grad.reshape(lead + (n, )))


# ----------------------------------------------------------------------
# The blackbox back-end: fixed shapes, no read from the device
# ----------------------------------------------------------------------
def _positions(n: int, dtype: torch.dtype, device) -> Tensor:
    """1..n in ``dtype``: the rank at each place of a sorted row."""
    return torch.arange(1, n + 1, dtype=dtype, device=device)


def _perturbed_ranks(ranked: Tensor, ranks: Tensor, grad_ranks: Tensor,
                     lambda_val: float, positions: Tensor,
                     sorted_values: Optional[Tuple[Tensor, Tensor]]
                     ) -> Tensor:
    """Integer ranks of ``ranked + lambda * grad_ranks`` (ties by index):
    Algorithm 1's second ranking.

    Only the positives move (``grad_ranks`` is zero elsewhere). On a
    device that is a second sort: one segmented op, no read. On the CPU,
    where a read is free and a sort is the cost, the movers are merged
    into the first order (``sorted_values``, :func:`~..ops.stable_order.
    descending_order` of ``ranked``) by :func:`~..ops.sparse_rerank.
    rerank_sparse` unless many moved: the same ranks."""
    perturbed = torch.add(ranked, grad_ranks, alpha=lambda_val)
    if reads_are_free(ranked):
        rows, n = ranked.shape
        moved_at = grad_ranks.nonzero(as_tuple=True)
        if not moved_at[0].numel():
            return ranks.clone()
        if moved_at[0].numel() <= SPARSE_RERANK_MAX_MOVED * rows * n:
            moved = grad_ranks != 0
            return rerank_sparse(ranked, ranks, moved, perturbed, False,
                                 sorted_values, moved_at)
    return ranks_from_order(descending_indices(perturbed), positions)


def _blackbox_ap(shifted: Tensor, positives: Tensor,
                 length: Optional[Tensor], lambda_val: float,
                 normalize: bool, reduction: str, positive_rank_grad: bool,
                 need_grad: bool, order=None):
    """Loss, per-row AP, valid rows and the score gradient at unit upstream
    scale of :func:`blackbox_ap`, without autograd. The derivative of
    ``1 - AP`` in the ranks is written out in the operations autograd runs
    (``DivBackward``: ``grad / other`` and ``-grad * ((self / other) /
    other)``), so that its bits are autograd's; masks are products with
    0/1 masks (a masked value is finite, so ``x * 0`` is a zero)."""
    rows, n = shifted.shape
    work = shifted.dtype
    if positive_rank_grad:  # Eq. 21's numerator ranked by Algorithm 1 too
        ranked = torch.cat(
            [shifted, shifted.masked_fill(~positives, float('-inf'))])
    else:
        ranked = shifted
    if order is None and reads_are_free(ranked):
        order = descending_order(ranked)
    sorted_values = order
    order = descending_indices(ranked) if order is None else order[1]
    positions = _positions(n, work, shifted.device)
    int_ranks = ranks_from_order(order, positions)
    if positive_rank_grad:
        int_all, int_pos = int_ranks[:rows], int_ranks[rows:]
    else:
        # rank among the positives: the positives at or above each place,
        # counted in integers (exact, deterministic on CUDA)
        counted = positives.gather(-1, order).cumsum(-1, dtype=torch.int32)
        int_all = int_ranks
        int_pos = torch.empty_like(counted).scatter_(-1, order,
                                                     counted).to(work)
    scale = n
    if normalize and length is not None:  # the ranked elements of a row
        scale = length.clamp(min=1).to(work).unsqueeze(-1)
    ranks = int_ranks
    if normalize:
        rank_scale = scale if length is None or not positive_rank_grad \
            else torch.cat([scale, scale])
        ranks = int_ranks / rank_scale
        rank_all = ranks[:rows]
        rank_pos = ranks[rows:] if positive_rank_grad else int_pos / scale
    else:
        rank_all, rank_pos = int_all, int_pos
    precision = rank_pos / rank_all  # Eq. 21 (a ratio: any rank scale)
    # a float mask: a product with it is one vectorised pass on the CPU
    # (a product with a bool tensor casts element by element, 5x slower)
    pos_mask = positives.to(work)
    num_pos = torch.count_nonzero(positives, dim=-1)
    valid = num_pos > 0
    per_pos = num_pos.clamp(min=1)
    ap = (precision * pos_mask).sum(-1) / per_pos
    total = ((1 - ap) * valid).sum()
    if reduction == 'sum':
        loss, grad_ap = total, total.new_full((), -1.0)
    else:
        num_valid = valid.sum().clamp(min=1).to(work)
        loss, grad_ap = total / num_valid, num_valid.reciprocal().neg()
    if not need_grad:
        return loss, ap, valid, None
    # dL/d rank_all = -g * ((rank_pos / rank_all) / rank_all) at the
    # positives, g = dL/dAP / P
    grad_prec = ((grad_ap * valid) / per_pos).unsqueeze(-1)
    grad_all = (-grad_prec * (precision / rank_all)) * pos_mask
    if positive_rank_grad:
        grad_ranks = torch.cat(
            [grad_all, (grad_prec / rank_all) * pos_mask])
    else:
        grad_ranks = grad_all
    perturbed = _perturbed_ranks(ranked, int_ranks, grad_ranks, lambda_val,
                                 positions, sorted_values)
    if normalize:
        perturbed = perturbed / rank_scale
    grad = perturbed.sub_(ranks).div_(lambda_val)
    return loss, ap, valid, grad


class _BlackboxAP(torch.autograd.Function):
    """``1 - AP`` of rows, its gradient computed in forward (Algorithm 1
    at unit upstream scale); backward multiplies it by the incoming one."""

    @staticmethod
    def forward(ctx, shifted, positives, length, lambda_val, normalize,
                reduction, positive_rank_grad, need_grad, order):
        loss, ap, valid, grad = _blackbox_ap(
            shifted.detach(), positives, length, lambda_val, normalize,
            reduction, positive_rank_grad, need_grad, order)
        ctx.positive_rank_grad = positive_rank_grad
        ctx.save_for_backward(grad, positives)
        if grad is None:
            grad_out = shifted.new_empty(0)
        elif positive_rank_grad:  # what backward gives at unit scale
            rows = positives.shape[0]
            grad_out = grad[:rows] + grad[rows:].masked_fill(~positives, 0)
        else:
            grad_out = grad  # saved too: an in-place change raises there
        ctx.mark_non_differentiable(ap, valid, grad_out)
        return loss, ap, valid, grad_out

    @staticmethod
    def backward(ctx, grad_loss, _ap, _valid, _grad):
        grad, positives = ctx.saved_tensors
        if grad is None:
            return (None, ) * 9
        if ctx.positive_rank_grad:  # the stack and masked_fill, chained
            rows = positives.shape[0]
            out = grad[:rows] * grad_loss + (
                grad[rows:] * grad_loss).masked_fill(~positives, 0)
        else:
            out = grad * grad_loss
        return (out, ) + (None, ) * 8


def blackbox_ap(shifted: Tensor,
                positives: Tensor,
                lambda_val: float,
                normalize_ranks: bool = True,
                reduction: str = 'mean',
                positive_rank_grad: bool = False,
                with_grad: bool = False,
                length: Optional[Tensor] = None,
                order: Optional[Tuple[Tensor, Tensor]] = None
                ) -> APLossResult:
    """``1 - AP`` of each row of shifted scores, by RaMBO's Algorithm 1,
    in a fixed number of tensor operations and without a read from the
    device.

    Every shape is the input's: rows without a positive stay and are
    masked, elements that are not ranked are ``-inf`` (after every ranked
    one, they change no rank), and the ranks among the positives come from
    the one sort by an integer ``cumsum``. The derivative of ``1 - AP`` in
    the ranks is written out (no inner autograd), and Algorithm 1's second
    ranking is a second sort of ``y + lambda * dL/drk`` on a device (on
    the CPU the movers are merged into the first order, the same ranks).
    The result equals the ranking of every row alone with its ``-inf``
    elements removed.

    Args:
        shifted (Tensor): Margin-shifted scores (R, n) in the rank dtype,
            finite or ``-inf`` (not ranked); a positive must be finite.
        positives (Tensor): Bool (R, n).
        lambda_val (float): Algorithm 1's strength, > 0.
        normalize_ranks (bool): Ranks divided by the ranked elements of
            their row (see :func:`rambo_ap_loss`).
        reduction (str): ``'mean'`` or ``'sum'`` over rows with a positive.
        positive_rank_grad (bool): Algorithm 1 on the rank among the
            positives too (a stacked second ranking).
        with_grad (bool): Also return the score gradient at unit scale.
        length (Tensor, optional): Ranked (finite) elements per row (R,),
            when some are ``-inf``. Defaults to None: all n.
        order (tuple[Tensor, Tensor], optional):
            :func:`~..ops.stable_order.descending_order` of ``shifted``,
            when the caller has it more cheaply than a sort (not with
            ``positive_rank_grad``). Defaults to None.

    Returns:
        APLossResult: Loss (differentiable), AP per row (0 without a
        positive), the rows with a positive and, with ``with_grad``, the
        gradient (R, n).
    """
    need_grad = bool(with_grad) or (torch.is_grad_enabled()
                                    and shifted.requires_grad)
    loss, ap, valid, grad = _BlackboxAP.apply(
        shifted, positives, length, float(lambda_val), bool(normalize_ranks),
        reduction, bool(positive_rank_grad), need_grad, order)
    return APLossResult(loss, ap, valid, grad if with_grad else None)


@renamed_keywords(labels='positives')
def rambo_ap_loss(scores: Tensor,
                  positives: Tensor,
                  lambda_val: float = 0.5,
                  margin: float = 0.15,
                  normalize_ranks: bool = True,
                  reduction: str = 'mean',
                  positive_rank_grad: bool = False) -> Tensor:
    """RaMBO AP loss: ``1 - AP`` of each row of scores, differentiated by
    blackbox ranking (Algorithm 1); the functional form of
    :class:`~.ap_loss.RaMBOAPLoss`'s rankings.

    Ties are ranked by index (see
    :func:`~mmdet_rankloss.ops.ranking.exact_rank`). Rows without a
    positive have no AP and are left out (never NaN); when no row has one
    the result is a zero that keeps the graph.

    Args:
        scores (Tensor): Scores (..., n), one ranking per row. Any floating
            dtype; fp16/bf16 are shifted and ranked in fp32. Finite.
        positives (Tensor): Binary relevance (..., n), the scores' shape
            (bool or 0/1). Formerly ``labels`` (deprecated keyword).
        lambda_val (float): Algorithm 1's interpolation strength, > 0.
            Defaults to 0.5 (the paper's detection setting).
        margin (float): Margin alpha of Eq. 14 in score units, >= 0.
            Defaults to 0.15 (paper; the deprecated
            ``average_precision_loss`` keeps its 0.0).
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
            and the second pushes the best-ranked positives down
            (``docs/detection.md``). Defaults to False.

    Returns:
        Tensor: Scalar loss (fp32, fp64 for fp64 scores).

    Raises:
        ValueError: On bad shapes, non-binary positives, NaN/inf scores,
            lambda <= 0, margin < 0 or an unknown reduction.

    Example:
        >>> scores = torch.tensor([[0.9, 0.2, 0.6, 0.1]], requires_grad=True)
        >>> positives = torch.tensor([[1, 0, 0, 1]])
        >>> loss = rambo_ap_loss(scores, positives, margin=0.0)
        >>> round(loss.item(), 4)  # AP = (1/1 + 2/4) / 2
        0.25
    """
    owner = 'rambo_ap_loss'
    check_scores_and_masks(owner, scores, dict(positives=positives))
    margin = check_positive(owner, 'margin', margin, allow_zero=True)
    check_reduction(owner, reduction)
    lambda_val = check_positive(owner, 'lambda_val', lambda_val)
    normalize_ranks = check_flag(owner, 'normalize_ranks', normalize_ranks)
    positive_rank_grad = check_flag(owner, 'positive_rank_grad',
                                    positive_rank_grad)
    return blackbox_ap_of_rows(scores, positives, margin, lambda_val,
                               normalize_ranks, reduction,
                               positive_rank_grad).loss


#: Deprecated name of :func:`rambo_ap_loss` (with its old margin, 0.0)
average_precision_loss = deprecated_alias('average_precision_loss',
                                          rambo_ap_loss, margin=0.0)


def blackbox_ap_of_rows(scores: Tensor,
                        positives: Tensor,
                        margin: float,
                        lambda_val: float,
                        normalize_ranks: bool,
                        reduction: str,
                        positive_rank_grad: bool,
                        with_grad: bool = False) -> APLossResult:
    """:func:`blackbox_ap` of validated scores (..., n), shifted by the
    margin (Eq. 14) and ranked along the last dimension; AP, valid rows and
    gradient in the leading shape."""
    lead, n = scores.shape[:-1], scores.shape[-1]
    positives = positives.bool().reshape(-1, n)
    shifted = shift_scores(scores.reshape(-1, n), positives, margin)
    out = blackbox_ap(shifted, positives, lambda_val, normalize_ranks,
                      reduction, positive_rank_grad, with_grad)
    return APLossResult(
        out.loss, out.ap.reshape(lead), out.valid.reshape(lead),
        None if out.grad is None else out.grad.reshape(lead + (n, )))


def shift_scores(scores: Tensor, positives: Tensor, margin: float) -> Tensor:
    """Eq. 14's shift in the rank dtype; margin 0 shifts nothing (it would
    only turn -0.0 into +0.0, which every ranking here treats as equal),
    so it skips two passes."""
    if margin:
        return margin_shift(scores, positives, margin)
    return scores.to(rank_dtype(scores.dtype))


def blackbox_ap_classes(
        scores: Tensor, positives: Tensor,
        stored: Optional[Tuple[Tensor, Tensor]], margin: float,
        reduction: str, with_grad: bool, lambda_val: float,
        normalize_ranks: bool, positive_rank_grad: bool,
        masked: bool = False) -> Tuple[APLossResult, APLossResult]:
    """The RaMBO AP loss's two rankings of a batch by :func:`blackbox_ap`:
    ``1 - AP`` of each class over the batch and the stored batches
    (``L_mAP``, C rows) and of all the batch's (item, class) scores as one
    row (``L_APC``).

    Items whose scores are ``-inf`` (a RoI of weight 0, with ``masked``)
    are not ranked; the shapes never depend on the data. Without stored
    batches on the CPU, the classes' orders follow from the flat row's
    (:func:`~mmdet_rankloss.ops.stable_order.column_orders`, O(NC)) instead
    of a second sort; elsewhere both are one batched sort each.

    Args:
        scores (Tensor): Scores (N, C), finite or ``-inf`` (with
            ``masked``: whole rows of items that are not ranked).
        positives (Tensor): Bool (N, C), False where ``-inf``.
        stored (tuple[Tensor, Tensor], optional): Earlier batches' scores
            (M, C) and positives (M, C), ranked with each class but given
            no gradient; None for none.
        margin (float): Margin alpha of Eq. 14, >= 0.
        reduction (str): ``'mean'`` or ``'sum'`` over the classes with a
            positive (the flat row is one row).
        with_grad (bool): Also return the score gradients at unit scale.
        lambda_val (float): Algorithm 1's strength, > 0.
        normalize_ranks (bool): See :func:`rambo_ap_loss`.
        positive_rank_grad (bool): See :func:`rambo_ap_loss`.
        masked (bool): Whether some items may be ``-inf`` (then the ranks
            are normalised by the items ranked). Defaults to False.

    Returns:
        tuple[APLossResult, APLossResult]: The classes' result (C rows of
        N + M) and the flat row's (1 row of N * C).
    """
    n, num_classes = scores.shape
    values, targets = scores, positives
    if stored is not None:
        values = torch.cat([scores, stored[0].to(scores.dtype)])
        targets = torch.cat([positives, stored[1]])
        masked = True  # stored batches may hold items that were not ranked
    shifted = shift_scores(values, targets, margin)
    flat = shifted[:n].reshape(1, -1)
    flat_pos = positives.reshape(1, -1)
    class_length = flat_length = None
    if masked:
        ranked = shifted[:, 0] > float('-inf')  # an item: all or none
        class_length = ranked.sum(dtype=shifted.dtype).expand(num_classes)
        flat_length = (ranked[:n].sum(dtype=shifted.dtype) *
                       num_classes).reshape(1)
    flat_order = class_order = None
    if stored is None and not positive_rank_grad and n and \
            reads_are_free(scores):
        flat_order = descending_order(flat.detach())
        class_order = column_orders(*flat_order, num_classes)
    options = (lambda_val, normalize_ranks)
    per_class = blackbox_ap(shifted.t(), targets.t(), *options, reduction,
                            positive_rank_grad, with_grad, class_length,
                            class_order)
    across = blackbox_ap(flat, flat_pos, *options, 'mean',
                         positive_rank_grad, with_grad, flat_length,
                         flat_order)
    return per_class, across
