"""Re-rank after a few elements moved, without sorting everything again.

In Algorithm 1's second ranking of an AP or recall loss only the positives
move, and the others keep their order: the new ranking is a merge of the old
order with the sorted movers (a sort of p movers, binary searches, a few O(n)
passes), exactly :func:`~.ranking.exact_rank` of the perturbed scores, ties by
index included (a mover landing on a run of equal old scores is placed by a
binary search on the run's indices)."""
from typing import Optional, Tuple

import torch
from torch import Tensor

from .device import reads_are_free
from .stable_order import (descending_indices, descending_order,
                           ranks_from_order)

__all__ = ['rerank_sparse']


def rerank_sparse(scores: Tensor,
                  ranks: Tensor,
                  moved: Tensor,
                  new_scores: Tensor,
                  normalize: bool = False,
                  sorted_scores: Optional[Tuple[Tensor, Tensor]] = None,
                  moved_at: Optional[Tuple[Tensor, Tensor]] = None
                  ) -> Tensor:
    """Exact ranks of ``new_scores`` where only ``moved`` entries changed.

    On the CPU; elsewhere (a device, a ``torch.compile`` trace) the new scores
    are sorted again, with no read. The merge's host reads: the ``nonzero`` of
    ``moved`` (none with ``moved_at``), the widest row of movers and whether an
    old score equals a mover's new one. Counts are integer ``cumsum`` (exact,
    deterministic on CUDA in any torch).

    Args:
        scores (Tensor): Old scores (..., n), in rank dtype.
        ranks (Tensor): Their ranks from :func:`~.ranking.exact_rank` (1 =
            highest, divided by n if ``normalize``).
        moved (Tensor): Bool (..., n), the entries that may have changed.
        new_scores (Tensor): New scores (..., n); equal to ``scores`` where
            ``moved`` is False.
        normalize (bool): Whether ``ranks`` are divided by n (the result too).
        sorted_scores (tuple[Tensor, Tensor], optional): The ascending sort of
            ``-scores`` (values, indices), ties by index, if known; otherwise
            rebuilt from ``ranks`` in O(n).
        moved_at (tuple[Tensor, Tensor], optional): ``moved.reshape(-1,
            n).nonzero(as_tuple=True)``, if known. Defaults to None.

    Returns:
        Tensor: New ranks like ``ranks``.
    """
    shape, n = scores.shape, scores.shape[-1]
    if not reads_are_free(scores):
        # the device path: a stable sort of the new scores, no read
        new = ranks_from_order(descending_indices(new_scores),
                               torch.arange(1, n + 1, dtype=ranks.dtype,
                                            device=ranks.device))
        return new.div_(n) if normalize else new
    y = scores.reshape(-1, n)
    rows = y.shape[0]
    moved = moved.reshape(rows, n)
    if sorted_scores is not None:
        neg_sorted = sorted_scores[0].reshape(rows, n).to(y.dtype)
        order = sorted_scores[1].reshape(rows, n).contiguous()
    else:
        pos = (ranks.reshape(rows, n) *
               (n if normalize else 1)).round().long() - 1
        # old sorted order (descending) recovered from the ranks: O(n)
        order = torch.empty_like(pos).scatter_(
            1, pos, torch.arange(n, device=y.device).expand(rows, n))
        neg_sorted = -y.gather(1, order)
    # row-major order
    row_of, col_of = moved.nonzero(as_tuple=True) if moved_at is None \
        else moved_at
    if row_of.numel() == 0:
        return ranks.clone()
    count = torch.count_nonzero(moved, dim=1)
    # the padded table of movers is (rows, width): the number of movers is
    # a bound known on the host when the table stays no larger than the
    # scores (one row, or fewer movers than columns); else the widest row
    # is read from the device
    total = row_of.numel()
    width = total if rows == 1 or total <= n else int(count.max())
    # the movers' old sorted positions are their old ranks
    old_pos = (ranks.reshape(rows, n)[row_of, col_of] *
               (n if normalize else 1)).round().long() - 1

    start = torch.cumsum(count, 0) - count
    slot = torch.arange(row_of.numel(), device=y.device) - start[row_of]
    v = new_scores.reshape(rows, n)[row_of, col_of]
    # padded (rows, width) table of moved values, index order within a row;
    # pads are -inf after the real entries, so a stable sort keeps them last
    table = torch.full((rows, width), float('-inf'), dtype=y.dtype,
                       device=y.device)
    table[row_of, slot] = v
    # Sort the moved values first: their rank among the moved ones (ties by
    # index) comes out of it, and searching sorted queries is cache-friendly.
    by_value = descending_order(table)[1]
    among_moved = torch.empty_like(by_value).scatter_(
        1, by_value, torch.arange(width, device=y.device).expand(rows, width))
    neg_sorted = neg_sorted.contiguous()
    queries = -table.gather(1, by_value)
    # old values strictly greater (a binary search each)
    k = _unsort(torch.searchsorted(neg_sorted, queries),
                by_value)[row_of, slot]  # old elements ranked above
    at = (neg_sorted[row_of, k.clamp(max=n - 1)] == -v).nonzero(
        as_tuple=True)[0]
    if at.numel():  # equal old values of a smaller index rank above too
        k[at] = _past_equal(neg_sorted, order, row_of[at], k[at], -v[at],
                            col_of[at])
    # moved elements among the k old elements above: the movers' old
    # sorted positions marked on each row, summed in integers (exact)
    before = torch.zeros(rows, n + 1, dtype=torch.int32, device=y.device)
    before[row_of, old_pos + 1] = 1
    moved_before = before.cumsum_(1)[row_of, k]
    new_rank_moved = 1 + (k - moved_before) + among_moved[row_of, slot]
    # Unmoved element at sorted position s: new rank = 1 + s - (moved at
    # positions < s) + (moved inserted at or before s). Steps of +1 where a
    # mover is inserted and -1 after each mover's old position, on a row of
    # ones, sum up to it in one integer cumsum (exact, and deterministic on
    # CUDA). Column n collects the steps past the end (a mover inserted
    # last, or last before), so no mask (a host read) picks them out.
    step = torch.ones(rows, n + 1, dtype=torch.int32, device=y.device)
    one = torch.ones_like(row_of, dtype=torch.int32)
    step.index_put_((row_of, k), one, accumulate=True)
    step.index_put_((row_of, old_pos + 1), -one, accumulate=True)
    new_rank_sorted = step[:, :n].cumsum(1, dtype=torch.int32).to(
        ranks.dtype)
    new = torch.empty_like(new_rank_sorted).scatter_(1, order,
                                                     new_rank_sorted)
    new[row_of, col_of] = new_rank_moved.to(ranks.dtype)
    if normalize:
        new.div_(n)
    return new.reshape(shape)


def _unsort(sorted_values: Tensor, by_value: Tensor) -> Tensor:
    """Values given in each row's ``by_value`` order, back in table order."""
    return torch.empty_like(sorted_values).scatter_(1, by_value,
                                                    sorted_values)


def _past_equal(neg_sorted: Tensor, order: Tensor, row_of: Tensor,
                lo: Tensor, value: Tensor, index: Tensor) -> Tensor:
    """For each query, the first position p >= ``lo`` of its row where the
    old element is not (equal to ``value`` with a column below ``index``):
    a vectorised binary search, valid because a row lists a run of equal
    values in index order and larger values after it."""
    n = order.shape[1]
    values, columns = neg_sorted.reshape(-1), order.reshape(-1)
    base, hi = row_of * n, torch.full_like(lo, n)
    for _ in range(n.bit_length()):
        active = lo < hi
        mid = (lo + hi) >> 1
        at = base + mid.clamp(max=n - 1)
        below = (values[at] == value) & (columns[at] < index)
        lo = torch.where(active & below, mid + 1, lo)
        hi = torch.where(active & ~below, mid, hi)
    return lo
