"""Exact, memory-bounded Recall@K and MAP@R for embedding retrieval.

Recall@K: the fraction of queries with a relevant (same-class) gallery item
among their K nearest neighbours; MAP@R (Musgrave et al. 2020): with R the
number of relevant gallery items of a query, ``1/R * sum_{i <= R, item i
relevant} precision@i``. The protocol (fp32 inner products, ties to the lower
gallery index, self excluded by index, queries without a relevant item left out
and counted): docs/retrieval.md#evaluation.

Queries are scored in chunks (one reused fp32 buffer) and no row is sorted: a
query's best relevant item comes from its class's columns (binary search), its
rank from two counting comparisons (Recall@K for every K at once), and MAP@R
lists the first R items only of the rows that need them, from the column groups
that can hold them (:func:`_top_items`)."""
import math
from typing import Dict, Optional, Sequence

import torch
from torch import Tensor

from ..ops.stable_order import order_keys

__all__ = ['retrieval_metrics', 'recall_at_k', 'map_at_r']

# Scores held per chunk: chunk_size * gallery_size elements. At 2**26 the
# chunk's fp32 scores and the comparison buffer take 2 x 256 MB.
_DEFAULT_CHUNK_ELEMENTS = 2**26
_INDEX_BITS = 32
_MIN_WIDTH = 1  # items listed per MAP@R row, at least (R are needed)
# MAP@R's first-R lists: column groups per row, and how many groups per
# listed item may be ranked before a row falls back to ranking all its items
_CAND_BLOCKS = 1024
_BLOCKS_PER_ITEM = 2
# the fraction of a chunk's rows above which MAP@R's lists are built on the
# whole chunk instead of a copy of the rows that need them
_SUBSET_FRACTION = 0.5
# rows at least this long are counted in fp64 (fp32 sums of 0/1 values are
# exact only below 2**24)
_FP32_COUNT_LIMIT = 2**24


def _check(emb: Tensor, labels: Tensor, name: str) -> None:
    if not isinstance(emb, Tensor) or emb.dim() != 2 or \
            not emb.is_floating_point():
        got = tuple(emb.shape) if isinstance(emb, Tensor) else type(emb)
        raise ValueError(
            f'{name}_emb must be a floating point tensor of shape (N, D), '
            f'got {got}')
    if not isinstance(labels, Tensor) or labels.shape != (emb.shape[0], ):
        got = tuple(labels.shape) if isinstance(labels, Tensor) else type(
            labels)
        raise ValueError(
            f'{name}_labels must have shape ({emb.shape[0]},) to match '
            f'{name}_emb, got {got}')
    if labels.is_floating_point() or labels.is_complex():
        raise ValueError(f'{name}_labels must be integer class ids, got '
                         f'{labels.dtype}')
    if emb.numel() and not bool(torch.isfinite(emb).all()):
        raise ValueError(f'{name}_emb contains NaN or inf')


def check_ks(ks: Sequence[int]) -> tuple:
    if isinstance(ks, int):
        ks = (ks, )
    ks = tuple(ks)
    if not ks or any(
            isinstance(k, bool) or not isinstance(k, int) or k < 1
            for k in ks):
        raise ValueError(f'ks must be a non-empty list of ints >= 1, got {ks}')
    return ks


class _Members:
    """Gallery columns of each query's class by binary search: a chunk gets a
    padded (rows, R_max) matrix of its classes' members' columns."""

    def __init__(self, gallery_labels: Tensor) -> None:
        self.sorted_labels, self.perm = torch.sort(gallery_labels,
                                                   stable=True)

    def __call__(self, labels: Tensor, self_cols: Optional[Tensor]):
        first = torch.searchsorted(self.sorted_labels, labels)
        count = torch.searchsorted(
            self.sorted_labels, labels, right=True) - first
        width = max(int(count.max()) if count.numel() else 0, 1)
        offsets = torch.arange(width, device=labels.device)
        present = offsets[None, :] < count[:, None]
        pos = (first[:, None] + offsets[None, :]).clamp(
            max=max(self.perm.numel() - 1, 0))
        cols = self.perm[pos] if self.perm.numel() else pos
        if self_cols is not None:
            present &= cols != self_cols[:, None]
        return cols, present


@torch.no_grad()
def retrieval_metrics(query_emb: Tensor,
                      query_labels: Tensor,
                      gallery_emb: Optional[Tensor] = None,
                      gallery_labels: Optional[Tensor] = None,
                      ks: Sequence[int] = (1, ),
                      with_map_at_r: bool = True,
                      chunk_size: Optional[int] = None) -> Dict[str, float]:
    """Recall@K for every K in ``ks`` and MAP@R in one pass.

    Args:
        query_emb (Tensor): Query embeddings (Q, D), any float dtype (scored in
            fp32), any device.
        query_labels (Tensor): Integer labels (Q,).
        gallery_emb (Tensor, optional): Gallery embeddings (G, D). Defaults to
            None: the queries, each excluded from its own ranking by index.
        gallery_labels (Tensor, optional): Integer labels (G,); required with
            ``gallery_emb``.
        ks (Sequence[int]): Values of K, each >= 1. Defaults to (1,).
        with_map_at_r (bool): Also compute MAP@R. Defaults to True.
        chunk_size (int, optional): Queries scored at a time. Defaults to None:
            about 2**26 / G rows (two fp32 buffers of 256 MB).

    Returns:
        dict[str, float]: ``'R@K'`` for each K and ``'MAP@R'`` (in [0, 1]),
        ``'num_queries'`` (queries with a relevant item, the denominator) and
        ``'num_skipped'`` (the others).
    """
    self_gallery = gallery_emb is None
    gallery_emb, gallery_labels = _check_gallery(query_emb, query_labels,
                                                 gallery_emb, gallery_labels)
    ks = check_ks(ks)
    chunk_size = _check_chunk_size(chunk_size, gallery_emb.shape[0])
    device = query_emb.device
    state = _ChunkState(
        gallery_emb.to(device=device, dtype=torch.float32),
        gallery_labels.to(device=device, dtype=torch.int64),
        query_labels.to(device=device, dtype=torch.int64), ks,
        min(chunk_size, query_emb.shape[0]), self_gallery, with_map_at_r)
    for start in range(0, query_emb.shape[0], chunk_size):
        stop = min(start + chunk_size, query_emb.shape[0])
        state.add_chunk(query_emb[start:stop], start)
    return state.summary(query_emb.shape[0])


def _check_gallery(query_emb: Tensor, query_labels: Tensor,
                   gallery_emb: Optional[Tensor],
                   gallery_labels: Optional[Tensor]):
    """The gallery (the queries when none is given), checked."""
    _check(query_emb, query_labels, 'query')
    if (gallery_emb is None) != (gallery_labels is None):
        raise ValueError('gallery_emb and gallery_labels must be given '
                         'together (or neither, for query = gallery)')
    if gallery_emb is None:
        return query_emb, query_labels
    _check(gallery_emb, gallery_labels, 'gallery')
    if gallery_emb.shape[1] != query_emb.shape[1]:
        raise ValueError(
            f'query_emb has dimension {query_emb.shape[1]} but '
            f'gallery_emb {gallery_emb.shape[1]}')
    return gallery_emb, gallery_labels


def _check_chunk_size(chunk_size: Optional[int], num_gallery: int) -> int:
    if num_gallery >= 2**_INDEX_BITS - 1:
        raise ValueError(f'gallery of {num_gallery} items is too large')
    if chunk_size is None:
        return max(1, _DEFAULT_CHUNK_ELEMENTS // max(num_gallery, 1))
    if isinstance(chunk_size, bool) or not isinstance(
            chunk_size, int) or chunk_size < 1:
        raise ValueError(f'chunk_size must be an int >= 1, got {chunk_size!r}')
    return chunk_size


class _ChunkState:
    """The gallery, the buffers reused between chunks and the running
    totals (hits per K, AP@R per query) of :func:`retrieval_metrics`."""

    def __init__(self, gallery: Tensor, gallery_labels: Tensor,
                 query_labels: Tensor, ks: tuple, rows_max: int,
                 self_gallery: bool, with_map_at_r: bool) -> None:
        device, num_gallery = gallery.device, gallery.shape[0]
        self.gallery, self.gallery_labels = gallery, gallery_labels
        self.query_labels, self.ks = query_labels, ks
        self.self_gallery, self.with_map_at_r = self_gallery, with_map_at_r
        self.members = _Members(gallery_labels)
        self.ks_tensor = torch.tensor(ks, device=device)
        self.hits = torch.zeros(len(ks), dtype=torch.int64, device=device)
        self.ap_values = []  # AP@R of each query, summed exactly at the end
        self.num_valid = 0
        # reused between chunks: no page faults for a fresh matrix per chunk
        self.score_buf = torch.empty(rows_max * num_gallery, device=device)
        self.count_buf = torch.empty(
            rows_max * num_gallery,
            device=device,
            dtype=torch.float32
            if num_gallery < _FP32_COUNT_LIMIT else torch.float64)

    def add_chunk(self, queries: Tensor, start: int) -> None:
        """Adds the hits and AP@R of the queries ``start``, ... ."""
        num_rows, num_gallery = queries.shape[0], self.gallery.shape[0]
        rows = torch.arange(num_rows, device=queries.device)
        self_cols = rows + start if self.self_gallery else None
        labels = self.query_labels[start:start + num_rows]
        cols, present = self.members(labels, self_cols)
        num_rel = present.sum(1)
        has_rel = num_rel > 0
        self.num_valid += int(has_rel.sum())
        if not bool(has_rel.any()):
            return
        scores = torch.mm(
            queries.to(torch.float32),
            self.gallery.t(),
            out=self.score_buf[:num_rows * num_gallery].view(
                num_rows, num_gallery))
        if self.self_gallery:
            scores[rows, self_cols] = float('-inf')
        counts = self.count_buf[:scores.numel()].view(scores.shape)
        first_rank = _first_relevant_rank(scores, cols, present, counts)
        hit = (first_rank[:, None] <= self.ks_tensor[None, :]) & \
            has_rel[:, None]
        self.hits += hit.sum(0)
        if self.with_map_at_r:
            self._add_ap_at_r(scores, labels, first_rank, num_rel, has_rel)

    def _add_ap_at_r(self, scores: Tensor, labels: Tensor,
                     first_rank: Tensor, num_rel: Tensor,
                     has_rel: Tensor) -> None:
        ap = torch.zeros(scores.shape[0], dtype=torch.float64,
                         device=scores.device)
        # a query whose best relevant item ranks below R has AP@R = 0
        need = (has_rel & (first_rank <= num_rel)).nonzero()[:, 0]
        if need.numel():
            ap[need] = _ap_at_r(scores, need, self.gallery_labels, labels,
                                num_rel)
        self.ap_values += ap[has_rel].tolist()

    def summary(self, num_queries: int) -> Dict[str, float]:
        """The output dict of :func:`retrieval_metrics`."""
        denom = max(self.num_valid, 1)
        out = {f'R@{k}': int(self.hits[i]) / denom
               for i, k in enumerate(self.ks)}
        if self.with_map_at_r:
            # exactly rounded sum: the result does not depend on chunk_size
            out['MAP@R'] = math.fsum(self.ap_values) / denom
        out['num_queries'] = self.num_valid
        out['num_skipped'] = num_queries - self.num_valid
        return out


def _count(compare, scores: Tensor, value: Tensor, buf: Tensor) -> Tensor:
    """Per row, how many ``compare(scores, value)`` hold (int64): 0/1 written
    into a float buffer and summed (exact: fp32 only below
    ``_FP32_COUNT_LIMIT`` columns), about four times faster on CPU than a bool
    sum."""
    return compare(scores, value, out=buf).sum(1).to(torch.int64)


def _first_relevant_rank(scores: Tensor, cols: Tensor, present: Tensor,
                         buf: Tensor) -> Tensor:
    """1-based rank of each row's best relevant item (ties: lower index): the
    items strictly above it plus, only on the rows where more items tie with it
    than relevant ones (duplicates), the tied ones at a lower column. Rows
    without a relevant item get a meaningless rank."""
    values = scores.gather(1, cols).masked_fill(~present, float('-inf'))
    best = values.amax(1, keepdim=True)
    big = torch.iinfo(torch.int64).max
    tied_rel = present & (values == best)
    best_col = torch.where(tied_rel, cols, big).amin(1, keepdim=True)
    above = _count(torch.gt, scores, best, buf)
    equal = _count(torch.eq, scores, best, buf)
    foreign = (equal > tied_rel.sum(1)).nonzero()[:, 0]
    if foreign.numel():
        col_ids = torch.arange(scores.shape[1], device=scores.device)
        tied = (scores[foreign] == best[foreign]) & (
            col_ids[None, :] < best_col[foreign])
        above[foreign] += tied.sum(1)
    return above + 1


def _top_items(scores: Tensor, width: int) -> Tensor:
    """Columns of each row's ``width`` best items, by (score desc, col asc),
    exact, without a ``topk`` over whole rows.

    The columns are dealt into ``blocks`` groups (group j: columns j, j +
    blocks, ...); with ``tau`` the ``width``-th largest group maximum, the
    first ``width`` items lie in the groups whose maximum is >= tau (plus the
    tail of columns). Rows where at most ``_BLOCKS_PER_ITEM * width`` groups
    qualify rank only those by int64 (score, column) keys; other rows rank
    their whole row, a few rows at a time."""
    num_rows, num_cols = scores.shape
    device = scores.device
    out = torch.empty(num_rows, width, dtype=torch.int64, device=device)
    blocks = min(num_cols, max(_CAND_BLOCKS, 4 * width))
    rounds = num_cols // blocks
    body = scores[:, :blocks * rounds].unflatten(1, (rounds, blocks))
    group_max = body.amax(1)
    tail = scores[:, blocks * rounds:]
    maxima = group_max if not tail.shape[1] else torch.cat(
        [group_max, tail.amax(1, keepdim=True)], 1)
    tau = maxima.topk(width, dim=1).values[:, -1:]
    qualify = (group_max >= tau).sum(1)
    few = qualify <= min(_BLOCKS_PER_ITEM * width, blocks)
    rows = few.nonzero()[:, 0]
    if rows.numel():
        # the groups with maximum >= tau are the `limit` largest ones
        limit = max(int(qualify[rows].max()), 1)
        picked = group_max[rows].topk(limit, dim=1).indices
        cols = (picked[:, None, :] + blocks * torch.arange(
            rounds, device=device)[None, :, None]).flatten(1)
        if tail.shape[1]:
            tail_cols = torch.arange(
                blocks * rounds, num_cols, device=device).expand(
                    rows.numel(), -1)
            cols = torch.cat([cols, tail_cols], 1)
        if rows.numel() == num_rows:
            values = scores.gather(1, cols)
        else:
            # flat indices: no copy of the rows
            values = scores.reshape(-1)[rows[:, None] * num_cols + cols]
        best = order_keys(values, cols).topk(width, dim=1).indices
        out[rows] = cols.gather(1, best)
    rows = (~few).nonzero()[:, 0]
    if rows.numel():
        col_ids = torch.arange(num_cols, device=device)[None, :]
        step = max(1, 2**22 // num_cols)  # bounded int64 key memory
        for i in range(0, rows.numel(), step):
            part = rows[i:i + step]
            keys = order_keys(scores[part], col_ids)
            out[part] = keys.topk(width, dim=1).indices
    return out


def _ap_at_r(scores: Tensor, need: Tensor, gallery_labels: Tensor,
             labels: Tensor, num_rel: Tensor) -> Tensor:
    """AP@R (float64) of the rows ``need`` of the chunk (each has R >= 1).

    Reads their first R items (exact, ties by index), from a copy of the
    rows when they are few.
    """
    num_rel, labels = num_rel[need], labels[need]
    width = min(max(int(num_rel.max()), _MIN_WIDTH), scores.shape[1])
    if need.numel() > _SUBSET_FRACTION * scores.shape[0]:
        order = _top_items(scores, width)[need]
    else:
        order = _top_items(scores[need], width)
    rel = gallery_labels[order] == labels[:, None]
    positions = torch.arange(1, width + 1, device=scores.device)
    rel &= positions[None, :] <= num_rel[:, None]
    precision = rel.cumsum(1).to(torch.float64) / positions[None, :]
    return (precision * rel).sum(1) / num_rel.to(torch.float64)


def recall_at_k(query_emb: Tensor,
                query_labels: Tensor,
                gallery_emb: Optional[Tensor] = None,
                gallery_labels: Optional[Tensor] = None,
                ks: Sequence[int] = (1, ),
                chunk_size: Optional[int] = None) -> Dict[int, float]:
    """Recall@K: fraction of queries with a same-class item in the top K.

    See :func:`retrieval_metrics` for the protocol and the arguments.

    Returns:
        dict[int, float]: K -> recall in [0, 1].

    Example:
        >>> emb = torch.tensor([[1., 0.], [.9, .1], [0., 1.], [.1, .9]])
        >>> recall_at_k(emb, torch.tensor([0, 1, 1, 0]), ks=(1, 2))
        {1: 0.0, 2: 1.0}
    """
    ks = check_ks(ks)
    out = retrieval_metrics(query_emb, query_labels, gallery_emb,
                            gallery_labels, ks, False, chunk_size)
    return {k: out[f'R@{k}'] for k in ks}


def map_at_r(query_emb: Tensor,
             query_labels: Tensor,
             gallery_emb: Optional[Tensor] = None,
             gallery_labels: Optional[Tensor] = None,
             chunk_size: Optional[int] = None) -> float:
    """MAP@R (Musgrave et al. 2020), see :func:`retrieval_metrics`.

    Returns:
        float: MAP@R in [0, 1].
    """
    return retrieval_metrics(query_emb, query_labels, gallery_emb,
                             gallery_labels, (1, ), True,
                             chunk_size)['MAP@R']
