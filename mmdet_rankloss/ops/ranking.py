"""Ranks and their blackbox derivative (RaMBO, Rolinek et al. 2020, Alg. 1).

The ranker is a stable descending sort: rank 1 is the highest score and
equal scores are ranked in order of their index (the earlier element gets
the better rank). This makes every call deterministic, on CPU and CUDA
alike, and reduces to Eq. 2 of the paper when there are no ties.
"""
from typing import Callable, Optional, Tuple

import torch
from torch import Tensor

from .checks import all_finite, check_data, check_positive
from .device import reads_are_free
from .sparse_rerank import rerank_sparse
from .stable_order import descending_order

__all__ = [
    'exact_rank', 'subset_rank', 'subset_rank_at', 'blackbox_rank',
    'blackbox_rank_loss', 'rank_dtype', 'margin_shift'
]


def rank_dtype(dtype: torch.dtype) -> torch.dtype:
    """Dtype ranks are computed in: at least fp32 (fp16 cannot count past
    2048), fp64 stays fp64 so that gradcheck sees exact values."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _sort_rank(scores: Tensor, normalize: bool = False, sort=None):
    """Ranks plus the sort they came from: (ranks, ascending sort of
    ``-scores``, order); ties by index (:func:`descending_order`, or
    ``sort`` if the caller already has it)."""
    n = scores.shape[-1]
    neg_sorted, order = descending_order(
        scores.detach()) if sort is None else sort
    positions = torch.arange(
        1, n + 1, device=scores.device,
        dtype=rank_dtype(scores.dtype)).expand(order.shape)
    ranks = torch.empty_like(positions).scatter_(-1, order, positions)
    return (ranks / n if normalize else ranks), neg_sorted, order


def exact_rank(scores: Tensor, normalize: bool = False) -> Tensor:
    """Ranks along the last dimension, 1 = highest score (no gradient).

    Args:
        scores (Tensor): Scores of shape (..., n). NaN is not allowed (the
            public functions check it); -inf and +inf are ordered normally.
        normalize (bool): Divide ranks by n. Defaults to False.

    Returns:
        Tensor: Ranks of the same shape, in :func:`rank_dtype` of the input.
    """
    return _sort_rank(scores, normalize)[0]


def _table_width(count: Tensor, total: int, n: int) -> int:
    """Columns of a padded (rows, width) table of a subset with ``count``
    elements per row and ``total`` in all, out of rows of length n: the
    widest row, read from the device, unless an upper bound known on the
    host is no larger than the rows themselves (one row; fewer elements
    than n), which saves that read (a wait on a GPU)."""
    if count.shape[0] == 1 or total <= n:
        return total
    return int(count.max())


def subset_rank(scores: Tensor, subset: Tensor) -> Tensor:
    """Exact rank of each ``subset`` element among the subset (no gradient).

    Equal to counting the subset elements at or above each one in the full
    ranking of :func:`exact_rank` (ties by index, 1 = highest), but it sorts
    only the subset: for AP's rank among the positives that is a sort of the
    positives instead of two random-access passes over the whole row.

    Args:
        scores (Tensor): Scores (..., n), no NaN.
        subset (Tensor): Bool of the same shape.

    Returns:
        Tensor: Ranks in :func:`rank_dtype`, 0 outside the subset.
    """
    shape, n = scores.shape, scores.shape[-1]
    out = torch.zeros(shape, dtype=rank_dtype(scores.dtype),
                      device=scores.device)
    row_of, col_of = subset.reshape(-1, n).nonzero(as_tuple=True)
    out.view(-1, n)[row_of, col_of] = subset_rank_at(
        scores.reshape(-1, n), row_of, col_of)
    return out


def subset_rank_at(scores: Tensor, row_of: Tensor, col_of: Tensor,
                   count: Optional[Tensor] = None) -> Tensor:
    """:func:`subset_rank` of the subset's elements only, as a flat vector.

    Args:
        scores (Tensor): Scores (rows, n), no NaN.
        row_of (Tensor): Row of each subset element (M,), non-decreasing
            (as ``nonzero`` of a row-major mask gives them).
        col_of (Tensor): Their columns (M,).
        count (Tensor, optional): Subset elements per row (rows,), if the
            caller has them. Defaults to None (counted here).

    Returns:
        Tensor: Their ranks among the subset of their row (M,), in
        :func:`rank_dtype`.
    """
    work = rank_dtype(scores.dtype)
    rows, n = scores.shape
    if row_of.numel() == 0:
        return torch.zeros(0, dtype=work, device=scores.device)
    if count is None:  # index_add, not bincount: no read from the device
        count = torch.zeros(rows, dtype=torch.long,
                            device=scores.device).index_add_(
                                0, row_of, torch.ones_like(row_of))
    slot = torch.arange(row_of.numel(), device=scores.device) - (
        torch.cumsum(count, 0) - count)[row_of]
    # a padded (rows, width) table of the subset's values in index order;
    # the -inf pads come after the real entries, so (ties by index) they
    # rank last
    table = torch.full((rows, _table_width(count, row_of.numel(), n)),
                       float('-inf'), dtype=work, device=scores.device)
    table[row_of, slot] = scores.detach()[row_of, col_of].to(work)
    by_value = descending_order(table)[1]
    ranks = torch.empty_like(table).scatter_(
        1, by_value,
        torch.arange(1, table.shape[1] + 1, dtype=work,
                     device=scores.device).expand_as(table))
    return ranks[row_of, slot]


def margin_shift(scores: Tensor, positives: Tensor, margin: float) -> Tensor:
    """Eq. 14 of the paper: positives - margin / 2, negatives + margin / 2, in
    :func:`rank_dtype` (fp16 would round the shift away). Ranking the shifted
    scores (Eq. 15) counts a positive as beaten unless it leads every negative
    by ``margin`` (remedy P2).

    Args:
        scores (Tensor): Scores of any shape.
        positives (Tensor): Bool tensor of the same shape.
        margin (float): The margin alpha (>= 0).

    Returns:
        Tensor: Shifted scores in :func:`rank_dtype` of the input,
        differentiable w.r.t. ``scores``.
    """
    half = margin / 2
    work = scores.to(rank_dtype(scores.dtype))
    return work + torch.where(positives, -half, half).to(work.dtype)


# Above this share of moved elements a full re-sort beats the merge.
SPARSE_RERANK_MAX_MOVED = 0.25


def _blackbox_grad(scores: Tensor, ranks: Tensor, grad_ranks: Tensor,
                   lambda_val: float, normalize: bool,
                   sorted_scores=None, moved_at=None) -> Tensor:
    """Algorithm 1's backward: -(rk(y) - rk(y + lambda * dL/drk)) / lambda.

    Only elements with a nonzero ``dL/drk`` move (for AP and recall losses,
    the positives), so ``rk(y + lambda * dL/drk)`` is computed by merging
    the moved elements into the existing order (:func:`rerank_sparse`, exact)
    unless many moved. ``sorted_scores`` = (ascending sort of -scores,
    order) of ``scores`` from the forward sort saves recomputing them;
    ``moved_at``, places of the flattened rows outside which ``dL/drk`` is
    zero, saves the host read that finds them.
    """
    work = rank_dtype(scores.dtype)
    base = scores.detach().to(work)
    perturbed = torch.add(base, grad_ranks.to(work), alpha=lambda_val)
    n = grad_ranks.shape[-1]
    if not reads_are_free(base):
        # the device path: a second stable sort, no read (the merge below
        # reads the movers' count and places)
        return exact_rank(perturbed, normalize).sub_(ranks).div_(lambda_val)
    if moved_at is None:
        moved = grad_ranks != 0
        # one host read tells both how many moved and where
        moved_at = moved.reshape(-1, n).nonzero(as_tuple=True)
    else:
        moved = torch.zeros(grad_ranks.numel() // n, n, dtype=torch.bool,
                            device=grad_ranks.device)
        moved[moved_at] = True
        moved = moved.view(grad_ranks.shape)
    if moved_at[0].numel() <= SPARSE_RERANK_MAX_MOVED * moved.numel():
        perturbed_ranks = rerank_sparse(base, ranks, moved, perturbed,
                                        normalize, sorted_scores, moved_at)
    else:
        perturbed_ranks = exact_rank(perturbed, normalize)
    # -(rk(y) - rk(y')) / lambda, in place in the fresh perturbed ranks
    return perturbed_ranks.sub_(ranks).div_(lambda_val)


def _validate(scores: Tensor, lambda_val: float, allow_neg_inf=False,
              owner: str = 'blackbox_rank'):
    check_positive(owner, 'lambda_val', lambda_val)
    if not isinstance(scores, Tensor):
        raise ValueError(f'scores must be a torch.Tensor, got {type(scores)}')
    if scores.dim() == 0:
        raise ValueError('scores must have at least one dimension (the '
                         'sequence to rank), got a 0-d tensor')
    if scores.shape[-1] == 0:
        raise ValueError(f'scores has an empty last dimension (shape '
                         f'{tuple(scores.shape)}): nothing to rank')
    if not scores.is_floating_point():
        raise ValueError(f'scores must be floating point, got {scores.dtype}')
    if not reads_are_free(scores):
        # a device assertion, no read (a static message)
        finite = scores.masked_fill(scores == float('-inf'), 0) \
            if allow_neg_inf else scores
        check_data(owner, [(all_finite(finite),
                            'scores contain NaN or inf (-inf allowed: '
                            f'{allow_neg_inf})')])
        return
    bad = torch.isnan(scores)
    if not allow_neg_inf:
        bad = bad | torch.isinf(scores)
    else:
        bad = bad | (scores == float('inf'))
    if bool(bad.any()):
        raise ValueError(
            f'scores contain {int(bad.sum())} non-finite value(s) '
            f'(NaN or inf); ranks of non-finite scores are undefined')


class _BlackboxRank(torch.autograd.Function):

    @staticmethod
    def forward(ctx, scores, lambda_val, normalize):
        ranks = exact_rank(scores, normalize)
        ctx.save_for_backward(scores, ranks)
        ctx.lambda_val = lambda_val
        ctx.normalize = normalize
        return ranks

    @staticmethod
    def backward(ctx, grad_ranks):
        scores, ranks = ctx.saved_tensors
        grad = _blackbox_grad(scores, ranks, grad_ranks, ctx.lambda_val,
                              ctx.normalize)
        return grad.to(scores.dtype), None, None


def blackbox_rank(scores: Tensor,
                  lambda_val: float,
                  normalize: bool = False) -> Tensor:
    """Differentiable ranks by blackbox interpolation (Algorithm 1): exact
    ranks forward, ``-(rk(y) - rk(y + lambda * dL/drk)) / lambda`` backward.

    Args:
        scores (Tensor): Shape (..., n); ranked along the last dimension,
            batched over the leading ones. fp16/bf16 are ranked in fp32.
        lambda_val (float): Interpolation strength, > 0 (small: close to the
            true, zero a.e. gradient; large: denser, less faithful).
        normalize (bool): Ranks divided by n (the public RaMBO code), i.e.
            ``lambda * n`` on integer ranks. Defaults to False.

    Returns:
        Tensor: Ranks (1 = highest) of the input's shape, fp32 (fp64 for fp64
        input).

    Raises:
        ValueError: On 0-d or empty input, NaN/inf scores or lambda <= 0.
    """
    _validate(scores, lambda_val)
    return _BlackboxRank.apply(scores, float(lambda_val), bool(normalize))


class _BlackboxRankLoss(torch.autograd.Function):
    """Loss through ranks, the score gradient computed in forward (``dL/drk``
    is known there at unit scale): backward is a product, and the caller may
    read the gradient (``return_grad``)."""

    @staticmethod
    def forward(ctx, scores, loss_from_ranks, lambda_val, normalize,
                need_grad, return_grad, sort, moved_at):
        ranks, neg_sorted, order = _sort_rank(scores, normalize, sort)
        with torch.enable_grad():
            leaf = ranks.detach().requires_grad_(True)
            loss = loss_from_ranks(leaf)
            if not isinstance(loss, Tensor) or loss.dim() != 0:
                shape = tuple(loss.shape) if isinstance(loss, Tensor) \
                    else type(loss)
                raise ValueError('loss_from_ranks must return a scalar '
                                 f'tensor, got {shape}')
            grad_ranks = None
            if need_grad and loss.requires_grad:
                (grad_ranks, ) = torch.autograd.grad(
                    loss, leaf, allow_unused=True)
        if not need_grad:
            grad = None
        elif grad_ranks is None:
            grad = torch.zeros_like(ranks)
        else:
            grad = _blackbox_grad(scores, ranks, grad_ranks, lambda_val,
                                  normalize, (neg_sorted, order), moved_at)
        ctx.save_for_backward(grad)
        ctx.in_dtype = scores.dtype
        grad_out = grad.clone() if return_grad else ranks.new_empty(0)
        ctx.mark_non_differentiable(grad_out)
        return loss.detach(), grad_out

    @staticmethod
    def backward(ctx, grad_loss, _unused):
        (grad, ) = ctx.saved_tensors
        if grad is None:
            return (None, ) * 8
        return ((grad * grad_loss).to(ctx.in_dtype), ) + (None, ) * 7


def blackbox_rank_loss(scores: Tensor,
                       loss_from_ranks: Callable[[Tensor], Tensor],
                       lambda_val: float,
                       normalize: bool = False,
                       return_grad: bool = False,
                       validate: bool = True,
                       sort: Optional[Tuple[Tensor, Tensor]] = None,
                       moved_at: Optional[Tuple[Tensor, Tensor]] = None):
    """A rank-based loss differentiated by Algorithm 1, immune to scaling.

    ``loss_from_ranks`` is evaluated on the exact ranks and its ``dL/drk``
    taken at unit upstream gradient; Algorithm 1's perturbed ranking runs in
    forward, and backward multiplies the score gradient by the incoming one. So
    a factor ``c`` on the loss (``loss_weight``, AMP) scales its gradient only,
    unlike ``loss_fn(blackbox_rank(...))``, where it acts as ``c * lambda``
    (docs/losses.md).

    Args:
        scores (Tensor): Shape (..., n), ranked along the last dimension;
            ``-inf`` allowed (always last, masks an element out), NaN and
            ``+inf`` not.
        loss_from_ranks (callable): Maps ranks (the scores' shape) to a scalar
            loss, differentiable in the ranks.
        lambda_val (float): Interpolation strength, > 0.
        normalize (bool): Ranks divided by n, see :func:`blackbox_rank`.
            Defaults to False.
        return_grad (bool): Also return the score gradient at unit upstream
            scale (detached, in :func:`rank_dtype`). Defaults to False.
        validate (bool): Check ``scores`` and ``lambda_val`` (two passes).
            Defaults to True.
        sort (tuple[Tensor, Tensor], optional): ``descending_order`` of
            ``scores`` (:mod:`.stable_order`), if known. Not checked. Defaults
            to None (sort here).
        moved_at (tuple[Tensor, Tensor], optional): ``(row, column)`` places of
            ``scores.reshape(-1, n)``, row-major, outside which ``dL/drk`` is
            zero (an AP loss: the positives); saves a host read. Not checked.
            Defaults to None (found here).

    Returns:
        Tensor | tuple[Tensor, Tensor]: The scalar loss value, differentiable
        w.r.t. ``scores``; with ``return_grad`` also the gradient (..., n).

    Raises:
        ValueError: On 0-d or empty input, NaN/+inf scores, lambda <= 0 or a
            non-scalar ``loss_from_ranks``.
    """
    if validate:
        _validate(scores, lambda_val, True, 'blackbox_rank_loss')
    need_grad = bool(return_grad) or (torch.is_grad_enabled()
                                      and scores.requires_grad)
    loss, grad = _BlackboxRankLoss.apply(scores, loss_from_ranks,
                                         float(lambda_val), bool(normalize),
                                         need_grad, bool(return_grad),
                                         sort, moved_at)
    return (loss, grad) if return_grad else loss
