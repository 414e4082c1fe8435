"""``1 - AP`` of rows of scores: the functional core of the AP losses.

Paper: Rolinek et al., "Optimizing Rank-based Metrics with Blackbox
Differentiation", CVPR 2020, https://arxiv.org/abs/1912.03500, Eq. 14 and
21-22. Precision of a positive is its rank among the positives over its
rank among all, on scores shifted by Eq. 14's margin; AP is their mean.

:func:`blackbox_ap` (Algorithm 1, fixed shapes, no read from the device)
is what the losses train with; :func:`ap_of_rows` serves the other
back-ends. Design and speed: docs/losses.md#ranking-core-and-speed."""
from typing import Callable, NamedTuple, Optional, Tuple

import torch
from torch import Tensor

from ..ops.checks import check_flag, check_positive
from ..ops.device import reads_are_free
from ..ops.ranking import (SPARSE_RERANK_MAX_MOVED, exact_rank, margin_shift,
                           rank_dtype, subset_rank_at)
from ..ops.sparse_rerank import rerank_sparse
from ..ops.stable_order import (column_orders, descending_indices,
                                descending_order, order_image,
                                ranks_from_order)
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
    """Mean per row of ``values`` at the positives ``(row_of, col_of)`` of a
    (rows, width) table; 0 for rows without any. A dense table and a row sum,
    not ``index_add``: the same bits in every CUDA run."""
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


def _in_shape(out: APLossResult, lead, n: int) -> APLossResult:
    """``out`` of (R, n) rows with AP, valid rows and gradient in the
    leading shape ``lead``."""
    return APLossResult(
        out.loss, out.ap.reshape(lead), out.valid.reshape(lead),
        None if out.grad is None else out.grad.reshape(lead + (n, )))


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
        with_grad (bool): Also return the gradient at unit scale, if the
            back-end knows it (``knows_grad``).
        rows_fn (callable): The back-end, ``rows_fn(shifted, positives,
            (row_of, col_of), num_pos, valid, reduction, with_grad)`` on (R, n)
            rows with at least one positive.
        knows_grad (bool): Whether ``rows_fn`` returns a gradient.
        at_positives (tuple[Tensor, Tensor], optional): ``nonzero`` of the
            positives as (R, n) rows, if known (else the one host read here).

    Returns:
        APLossResult: Loss, detached exact AP and valid flag per row (leading
        shape) and the gradient (or None).
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
    return _in_shape(out, lead, n)


# ----------------------------------------------------------------------
# The blackbox back-end: fixed shapes, no read from the device
# ----------------------------------------------------------------------
def _positions(n: int, dtype: torch.dtype, device) -> Tensor:
    """1..n in ``dtype``: the rank at each place of a sorted row."""
    return torch.arange(1, n + 1, dtype=dtype, device=device)


class _Group(NamedTuple):
    """Rows of one length that :func:`_blackbox_ap` ranks, each alone."""
    shifted: Tensor  # (R, n) in the rank dtype (a view is fine)
    positives: Tensor  # (R, n) bool
    length: Optional[Tensor]  # (R,) ranked elements per row; None: n
    reduction: str  # 'mean' or 'sum' over the group's rows
    order: Optional[Tuple[Tensor, Tensor]]  # descending_order of shifted
    # positive_rank_grad: shifted with the negatives -inf, else None
    of_positives: Optional[Tensor]
    # ranked with the other groups in one sort (:func:`_joint_keys`): the
    # int32 order image of shifted, else None
    image: Optional[Tensor]


def _split(flat: Tensor, groups) -> list:
    """Views (..., R, n) of each group's part of ``flat`` (..., total)."""
    views, start = [], 0
    for group in groups:
        rows, n = group.shifted.shape
        views.append(flat[..., start:start + rows * n].unflatten(
            -1, (rows, n)))
        start += rows * n
    return views


def _perturbed_ranks(out: Tensor, ranked: Tensor, positions: Tensor,
                     grad_ranks: Tensor, lambda_val: float, kept) -> None:
    """Writes into ``out`` the ranks of ``ranked + lambda * grad_ranks`` as
    ``positions``: Algorithm 1's second ranking. On a device a second sort;
    on the CPU the movers are merged into the first ranking (``kept``: its
    integer ranks, scale and order) by
    :func:`~..ops.sparse_rerank.rerank_sparse` unless many moved."""
    perturbed = torch.add(ranked, grad_ranks, alpha=lambda_val)
    int_ranks, scale, sorted_values = kept
    if int_ranks is not None:
        n = ranked.shape[-1]
        moved = grad_ranks.reshape(-1, n) != 0
        moved_at = moved.nonzero(as_tuple=True)
        if moved_at[0].numel() <= SPARSE_RERANK_MAX_MOVED * moved.numel():
            new = rerank_sparse(
                ranked.reshape(-1, n), int_ranks.reshape(-1, n), moved,
                perturbed.reshape(-1, n), False,
                tuple(t.reshape(-1, n) for t in sorted_values), moved_at)
            _scaled_into(out, new.view(out.shape), scale)
            return
    out.scatter_(-1, descending_indices(perturbed),
                 positions.expand(out.shape))


def _scaled_into(out: Tensor, int_ranks: Tensor, scale) -> None:
    """``out = int_ranks / scale`` (None: no scale), on the CPU."""
    if scale is None:
        out.copy_(int_ranks)
    else:
        torch.div(int_ranks, scale, out=out)


def _joint_ranks(flat: Tensor, groups, codes: list, keys: Tensor,
                 at_place: Tensor, scales: list, normalize: bool) -> None:
    """The first ranking of all groups in one sort (:func:`_joint_order`):
    writes the ranks (``at_place``: the rank at each sorted place) into
    ``flat[0]`` and the rank among the positives, the positives
    (``flat[-1]``) at or above each place of a row counted in integers,
    into ``flat[1]``; the same values as the groups' own sorts give."""
    order = _joint_order([group.image for group in groups], codes, keys,
                         groups)
    flat[:1].scatter_(-1, order, at_place)
    counted = flat[-1:].gather(-1, order)
    for view, scale in zip(_split(counted, groups), scales):
        count = view.cumsum(-1, dtype=torch.int32)
        if normalize:
            torch.div(count, scale, out=view)
        else:
            view.copy_(count)
    flat[1:2].scatter_(-1, order, counted)


def _group_loss(terms: Tensor, valid: Tensor, reduction: str):
    """(loss, ``-dL/dAP`` of each valid row or None for 1) of a group from
    ``terms`` (``1 - AP`` masked to the valid rows) and ``valid`` (0/1)."""
    if reduction == 'sum' or terms.shape[0] == 1:
        return terms.sum(), None
    count = valid.sum().clamp(min=1)
    return terms.sum() / count, count.reciprocal()


def _blackbox_ap(groups, lambda_val: float, normalize: bool,
                 positive_rank_grad: bool, need_grad: bool) -> list:
    """``[loss, ap, valid, grad]`` of :func:`blackbox_ap` for each group of
    rows, without autograd; ``grad`` at unit upstream scale is (R, n), or
    (2, R, n) with ``positive_rank_grad``.

    The groups' ranks lie side by side in one flat buffer (one op per step
    for all); on the device path (``_Group.image`` set) they are also ranked
    in one sort (:func:`_joint_order`). The derivative in the ranks is
    written in the operations autograd's ``DivBackward`` runs, so its bits
    are autograd's."""
    first = groups[0].shifted
    work, device = first.dtype, first.device
    total = sum(group.shifted.numel() for group in groups)
    integers = _positions(max(group.shifted.shape[-1] for group in groups),
                          work, device)
    stacked = 2 if positive_rank_grad else 1
    # the ranks (among all; with positive_rank_grad among the positives
    # too), the rank among the positives (then precision), positives (0/1)
    flat = torch.empty(stacked + 2, total, dtype=work, device=device)
    kept = []
    joint = groups[0].image is not None
    if joint:  # the rank at each sorted place, the keys, the row codes
        at_place = torch.empty(1, total, dtype=work, device=device)
        keys = torch.empty(1, total, dtype=torch.int64, device=device)
        codes = _row_codes(groups, device)
        scales = []
    places = _split(at_place, groups) if joint else groups
    for group, view, place in zip(groups, _split(flat, groups), places):
        shifted, positives = group.shifted, group.positives
        n = shifted.shape[-1]
        scale = n
        if normalize and group.length is not None:
            scale = group.length.clamp(min=1).to(work).unsqueeze(-1)
        if joint:
            # the same values as ``positions`` below, in one buffer
            if normalize:
                torch.div(integers[:n].expand(shifted.shape), scale,
                          out=place[0])
            else:
                place[0].copy_(integers[:n])
            view[-1].copy_(positives)
            scales.append(scale)
            kept.append((shifted, None, None))
            continue
        positions = integers[:n] / scale if normalize else integers[:n]
        ranked = shifted
        if positive_rank_grad:  # Eq. 21's numerator ranked by Alg. 1 too
            ranked = torch.stack([shifted, group.of_positives])
        sorted_values, int_ranks = group.order, None
        ranks = view[:stacked].view(ranked.shape)
        if reads_are_free(ranked) and ranked.numel():
            # the integer ranks too, for the merge of the second ranking
            if sorted_values is None:
                sorted_values = descending_order(ranked)
            int_ranks = ranks_from_order(sorted_values[1], integers[:n])
            _scaled_into(ranks, int_ranks, scale if normalize else None)
        order = descending_indices(ranked) if sorted_values is None \
            else sorted_values[1]
        if int_ranks is None:
            ranks.scatter_(-1, order, positions.expand(order.shape))
        if not positive_rank_grad:
            # rank among the positives: the positives at or above each
            # place, counted in integers (exact, deterministic on CUDA)
            counted = positives.gather(-1, order).cumsum(
                -1, dtype=torch.int32).to(work)
            view[1].scatter_(-1, order,
                             counted / scale if normalize else counted)
        view[-1].copy_(positives)
        kept.append((ranked, positions, (
            int_ranks, scale if normalize else None, sorted_values)))
    if joint:
        _joint_ranks(flat, groups, codes, keys, at_place, scales, normalize)
    rank_all, pos_mask = flat[0], flat[-1]
    if positive_rank_grad:
        flat[-2].copy_(flat[1])
    # Eq. 21 at the positives, in place of the rank among the positives
    masked = flat[-2].div_(rank_all).mul_(pos_mask)
    sums = [view.sum(-1) for view in _split(flat[-2:], groups)]
    sums = sums[0] if len(sums) == 1 else torch.cat(sums, -1)
    per_pos = sums[1].clamp(min=1)
    positive = sums[1] > 0
    valid = positive.to(work)
    ap = sums[0] / per_pos
    terms = (1 - ap) * valid
    out, rates, start = [], [], 0
    for group in groups:
        part = slice(start, start + group.shifted.shape[0])
        start = part.stop
        loss, rate = _group_loss(terms[part], valid[part], group.reduction)
        # -dL/dAP / P of each row, >= 0 (+0 where not valid)
        rates.append((valid[part] if rate is None else rate * valid[part])
                     / per_pos[part])
        out.append([loss, ap[part], positive[part], None])
    if not need_grad:
        return out
    ratio = masked / rank_all
    if positive_rank_grad:
        neg_pos_mask = pos_mask.neg()
    perturbed = torch.empty(stacked, total, dtype=work, device=device)
    # joint: the perturbed scores, side by side, ranked in one sort below
    moved = torch.empty(1, total, dtype=work, device=device) if joint \
        else perturbed
    for rate, (ranked, positions, merge), ratio_view, \
            rank_view, mask_view, out_view, moved_view in zip(
                rates, kept, _split(ratio, groups), _split(rank_all, groups),
                _split(neg_pos_mask if positive_rank_grad else ratio,
                       groups), _split(perturbed, groups),
                _split(moved, groups)):
        rate = rate.unsqueeze(-1)
        grad_ranks = rate * ratio_view  # dL/d rank_all at the positives
        if positive_rank_grad:  # dL/d rank_pos = g / rank_all
            grad_ranks = torch.stack(
                [grad_ranks, rate / rank_view * mask_view])
        if joint:  # grad_ranks >= +0: no -0.0 among the moved scores
            torch.add(ranked, grad_ranks, alpha=lambda_val, out=moved_view[0])
            continue
        _perturbed_ranks(out_view.view(ranked.shape), ranked, positions,
                         grad_ranks, lambda_val, merge)
    if joint:  # Algorithm 1's second ranking, all groups in one sort
        images = [image[0] for image in _split(order_image(moved), groups)]
        perturbed.scatter_(-1, _joint_order(images, codes, keys, groups),
                           at_place)
    grad = perturbed.sub_(flat[:stacked]).div_(lambda_val)
    for result, view in zip(out, _split(grad, groups)):
        result[3] = view if positive_rank_grad else view[0]
    return out


def _groups_of(shifted: Tensor, positives: Tensor, items: Optional[int],
               lengths, reductions, orders,
               positive_rank_grad: bool) -> list:
    """The groups :func:`_blackbox_ap` ranks: the rows of ``shifted``
    (``items`` None), or the columns of the (items + stored, C) scores and
    the first ``items`` rows as one flat row (the RaMBO AP loss's two
    rankings)."""
    of_positives = torch.where(positives, shifted, float('-inf')) \
        if positive_rank_grad else shifted
    joint = items is not None and _joint_keys(shifted, positive_rank_grad)
    image = order_image(shifted) if joint else shifted

    def rows(t):
        if items is None:
            return [t]
        return [t.t(), t[:items].reshape(1, -1)]

    return [
        _Group(*parts, length, reduction, order,
               pos_ranked if positive_rank_grad else None,
               image_rows if joint else None)
        for *parts, length, reduction, order, pos_ranked, image_rows in zip(
            rows(shifted), rows(positives), lengths, reductions, orders,
            rows(of_positives), rows(image))
    ]


def _joint_keys(shifted: Tensor, positive_rank_grad: bool) -> bool:
    """Whether the groups of :func:`_blackbox_ap` are ranked in one sort of
    int64 keys: the device path, fp32, without ``positive_rank_grad``. Such
    scores hold no -0.0 (:func:`blackbox_ap_classes` adds 0.0), so equal
    values have equal images."""
    return (shifted.dtype == torch.float32 and not positive_rank_grad
            and not reads_are_free(shifted))


def _row_codes(groups, device) -> list:
    """Each group's (R, 1) int64 offsets that put its rows after those of
    the groups before it in a descending sort of ``image + code``: row
    ``r`` of all, ``-r * 2**32`` (an int32 image spans less than 2**32)."""
    rows = sum(group.shifted.shape[0] for group in groups)
    codes = torch.arange(0, -rows * 2**32, -2**32, dtype=torch.int64,
                         device=device).unsqueeze(-1)
    return list(codes.split([group.shifted.shape[0] for group in groups]))


def _joint_order(images, codes, keys: Tensor, groups) -> Tensor:
    """The descending order, ties by index, of each row of each group, as
    places in the groups' side-by-side layout (1, total): one stable sort
    of ``image + code`` (``images``: each group's (R, n) int32)."""
    for image, code, key in zip(images, codes, _split(keys, groups)):
        torch.add(image, code, out=key[0])
    return torch.sort(keys, dim=-1, descending=True, stable=True).indices


class _BlackboxAP(torch.autograd.Function):
    """``1 - AP`` of groups of rows (:func:`_groups_of`), the gradient computed
    in forward at unit upstream scale; backward multiplies each group's by its
    loss's incoming gradient. Outputs ``(loss, ap, valid, grad)`` per group."""

    @staticmethod
    def forward(ctx, shifted, positives, items, lengths, reductions,
                orders, lambda_val, normalize, positive_rank_grad,
                need_grad, with_grad):
        ctx.set_materialize_grads(False)
        groups = _groups_of(shifted.detach(), positives, items, lengths,
                            reductions, orders, positive_rank_grad)
        results = _blackbox_ap(groups, lambda_val, normalize,
                               positive_rank_grad, need_grad)
        ctx.items, ctx.shape = items, shifted.shape
        ctx.stacked = positive_rank_grad
        ctx.save_for_backward(*(grad for *_, grad in results
                                if grad is not None))
        outputs, fixed = [], []
        for loss, ap, valid, grad in results:
            if not with_grad:
                grad = shifted.new_empty(0)
            elif positive_rank_grad:  # the two rankings' together
                grad = grad.sum(0)
            fixed += [ap, valid, grad]
            outputs += [loss, ap, valid, grad]
        ctx.mark_non_differentiable(*fixed)
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *grads):
        saved = ctx.saved_tensors
        if not saved:
            return (None, ) * 11
        scaled = []
        for grad, grad_loss in zip(saved, grads[::4]):
            if grad_loss is None:
                scaled.append(None)
            elif ctx.stacked:  # both rankings' gradients, one rounding
                scaled.append((grad * grad_loss).sum(0))
            else:
                scaled.append(grad * grad_loss)
        if ctx.items is None:
            out = scaled[0]
        else:  # the classes' columns, then the flat row's items
            out, flat = scaled
            if out is None:
                out = flat.new_zeros(ctx.shape[::-1])
            out = out.t()
            if flat is not None:
                out[:ctx.items].add_(flat.view(ctx.items, ctx.shape[1]))
        return (out, ) + (None, ) * 10


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
    """``1 - AP`` of each row of shifted scores by Algorithm 1, in a fixed
    number of tensor operations and without a read from the device.

    Rows without a positive are masked and ``-inf`` elements are not ranked;
    the result equals ranking every row alone without them.

    Args:
        shifted (Tensor): Margin-shifted scores (R, n) in the rank dtype,
            finite or ``-inf`` (not ranked); a positive must be finite.
        positives (Tensor): Bool (R, n).
        lambda_val (float): Algorithm 1's strength, > 0.
        normalize_ranks (bool): Ranks divided by the ranked elements of
            their row (see :func:`rambo_ap_loss`).
        reduction (str): ``'mean'`` or ``'sum'`` over rows with a positive.
        positive_rank_grad (bool): Algorithm 1 on the rank among the
            positives too.
        with_grad (bool): Also return the score gradient at unit scale.
        length (Tensor, optional): Ranked (finite) elements per row (R,).
            Defaults to None: all n.
        order (tuple[Tensor, Tensor], optional):
            :func:`~..ops.stable_order.descending_order` of ``shifted``, if
            known (not with ``positive_rank_grad``). Defaults to None.

    Returns:
        APLossResult: Loss, AP per row (0 without a positive), the rows with
        a positive and, with ``with_grad``, the gradient (R, n).
    """
    need_grad = bool(with_grad) or (torch.is_grad_enabled()
                                    and shifted.requires_grad)
    loss, ap, valid, grad = _BlackboxAP.apply(
        shifted, positives, None, (length, ), (reduction, ), (order, ),
        float(lambda_val), bool(normalize_ranks), bool(positive_rank_grad),
        need_grad, bool(with_grad))
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

    Ties are ranked by index. Rows without a positive are left out; when no
    row has one the result is a zero that keeps the graph.

    Args:
        scores (Tensor): Finite scores (..., n), one ranking per row;
            fp16/bf16 are ranked in fp32.
        positives (Tensor): Binary relevance (..., n), bool or 0/1. Formerly
            ``labels`` (deprecated keyword).
        lambda_val (float): Algorithm 1's strength, > 0. Defaults to 0.5.
        margin (float): Margin alpha of Eq. 14 in score units, >= 0.
            Defaults to 0.15 (paper; ``average_precision_loss`` keeps 0.0).
        normalize_ranks (bool): Rank as fractions ``rank / n`` (same value;
            Algorithm 1 then acts as ``lambda * n`` on integer ranks, see
            ``docs/detection.md``). Defaults to True.
        reduction (str): ``'mean'`` or ``'sum'`` over the rows with a
            positive. Defaults to ``'mean'``.
        positive_rank_grad (bool): Also differentiate the rank among the
            positives (Eq. 21's numerator); same value, see
            ``docs/detection.md``. Defaults to False.

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
    return _in_shape(out, lead, n)


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
    (``L_mAP``, C rows) and of all (item, class) scores as one row
    (``L_APC``), in one autograd Function (:class:`_BlackboxAP`).

    Args:
        scores (Tensor): Scores (N, C), finite or ``-inf`` (with ``masked``:
            whole rows of items that are not ranked).
        positives (Tensor): Bool (N, C), False where ``-inf``.
        stored (tuple[Tensor, Tensor], optional): Earlier batches' scores
            and positives (M, C), ranked without gradient; None for none.
        margin (float): Margin alpha of Eq. 14, >= 0.
        reduction (str): ``'mean'`` or ``'sum'`` over the classes with a
            positive.
        with_grad (bool): Also return the score gradients at unit scale.
        lambda_val (float): Algorithm 1's strength, > 0.
        normalize_ranks (bool): See :func:`rambo_ap_loss`.
        positive_rank_grad (bool): See :func:`rambo_ap_loss`.
        masked (bool): Whether some items may be ``-inf``. Defaults to False.

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
    if not margin and _joint_keys(shifted, positive_rank_grad):
        shifted = shifted + 0.0  # -0.0 to +0.0, which rank alike
    class_length = flat_length = None
    if masked:
        ranked = shifted[:, 0] > float('-inf')  # an item: all or none
        class_length = ranked.sum(dtype=shifted.dtype).expand(num_classes)
        flat_length = (ranked[:n].sum(dtype=shifted.dtype) *
                       num_classes).reshape(1)
    flat_order = class_order = None
    if stored is None and not positive_rank_grad and n and \
            reads_are_free(scores):
        flat_order = descending_order(shifted.detach().reshape(1, -1))
        class_order = column_orders(*flat_order, num_classes)
    need_grad = bool(with_grad) or (torch.is_grad_enabled()
                                    and shifted.requires_grad)
    outputs = _BlackboxAP.apply(
        shifted, targets, n, (class_length, flat_length), (reduction, 'mean'),
        (class_order, flat_order), float(lambda_val), bool(normalize_ranks),
        bool(positive_rank_grad), need_grad, bool(with_grad))
    per_class, across = (APLossResult(*outputs[k:k + 3], outputs[k + 3]
                                      if with_grad else None)
                         for k in (0, 4))
    return per_class, across
