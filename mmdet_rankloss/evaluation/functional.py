"""Exact, memory-bounded Recall@K and MAP@R for embedding retrieval.

Protocol (metric learning, e.g. Song et al. 2016; Musgrave et al. 2020):

* Recall@K: the fraction of queries with at least one relevant (same-class)
  gallery item among their K nearest neighbours.
* MAP@R: with R = the number of relevant gallery items of a query,
  ``1/R * sum_{i <= R, item i relevant} precision@i``, averaged over
  queries.

Neighbours are ranked by inner product (cosine similarity for L2-normalised
embeddings), computed in fp32, with a deterministic tie-break: equal scores
are ranked by gallery index, lower first. When the query set is its own
gallery, each query is excluded by its index, never by "dropping the first
neighbour" (duplicates and ties make that wrong). Queries without any
relevant gallery item cannot be retrieved correctly and are left out of the
averages (their number is reported).

Nothing of size queries x gallery is kept: queries are scored in chunks of
``chunk_size`` rows, and no row is sorted in full. Per chunk:

* ``topk`` gives each row's best ``width`` items (``width`` = its largest R
  + 1, at least 32), re-sorted exactly by (score, index);
* a query's best relevant item is found among its class's gallery columns
  (binary search in the sorted labels, no label matrix); if it scores above
  the last candidate, its rank is read from the candidates; otherwise (a
  badly ranked query) its rank is ``1 + #items scoring higher + #items tied
  with it at a lower index``, counted over the row: Recall@K for every K at
  once, even K = 1000, without a sort;
* MAP@R reads the first R candidates; where a tie crosses position R, the
  tied items are ordered by index over the whole row (int64 keys).
"""
import math
from typing import Dict, Optional, Sequence

import torch
from torch import Tensor

__all__ = ['retrieval_metrics', 'recall_at_k', 'map_at_r']

# Scores held per chunk: chunk_size * gallery_size elements. At 2**24 the
# chunk's fp32 scores and temporary masks take a few hundred MB.
_DEFAULT_CHUNK_ELEMENTS = 2**24
_INDEX_BITS = 32
_MIN_WIDTH = 32  # candidates per row, at least


def _check(emb: Tensor, labels: Tensor, name: str) -> None:
    if not isinstance(emb, Tensor) or emb.dim() != 2 or \
            not emb.is_floating_point():
        raise ValueError(
            f'{name}_emb must be a floating point tensor of shape (N, D), '
            f'got {tuple(emb.shape) if isinstance(emb, Tensor) else type(emb)}')
    if not isinstance(labels, Tensor) or labels.shape != (emb.shape[0], ):
        raise ValueError(
            f'{name}_labels must have shape ({emb.shape[0]},) to match '
            f'{name}_emb, got '
            f'{tuple(labels.shape) if isinstance(labels, Tensor) else type(labels)}'
        )
    if labels.is_floating_point() or labels.is_complex():
        raise ValueError(f'{name}_labels must be integer class ids, got '
                         f'{labels.dtype}')
    if emb.numel() and not bool(torch.isfinite(emb).all()):
        raise ValueError(f'{name}_emb contains NaN or inf')


def _check_ks(ks: Sequence[int]) -> tuple:
    if isinstance(ks, int):
        ks = (ks, )
    ks = tuple(ks)
    if not ks or any(
            isinstance(k, bool) or not isinstance(k, int) or k < 1
            for k in ks):
        raise ValueError(f'ks must be a non-empty list of ints >= 1, got {ks}')
    return ks


def _keys(scores: Tensor, cols: Tensor) -> Tensor:
    """int64 keys ordered like (score descending, column ascending).

    The fp32 bit pattern, made monotone for negative numbers, is the high
    word; the complemented column index is the low word, so keys are
    unique in a row and a larger key means a better rank.
    """
    scores = scores.to(torch.float32) + 0.0  # -0.0 -> +0.0 (they tie)
    bits = scores.view(torch.int32).to(torch.int64)
    bits = torch.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    return bits * 2**_INDEX_BITS + ((2**_INDEX_BITS - 1) - cols)


class _Members:
    """Gallery columns of each query's class, found by binary search.

    Avoids a (queries x gallery) label comparison: a chunk gets a padded
    (rows, R_max) matrix of column indices of its classes' members.
    """

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


def retrieval_metrics(query_emb: Tensor,
                      query_labels: Tensor,
                      gallery_emb: Optional[Tensor] = None,
                      gallery_labels: Optional[Tensor] = None,
                      ks: Sequence[int] = (1, ),
                      with_map_at_r: bool = True,
                      chunk_size: Optional[int] = None) -> Dict[str, float]:
    """Recall@K for every K in ``ks`` and MAP@R in one pass.

    Args:
        query_emb (Tensor): Query embeddings (Q, D), any float dtype
            (scored in fp32), any device.
        query_labels (Tensor): Integer labels (Q,).
        gallery_emb (Tensor, optional): Gallery embeddings (G, D). None: the
            queries are their own gallery and query i is excluded from its
            ranking by index. Defaults to None.
        gallery_labels (Tensor, optional): Integer labels (G,); required
            with ``gallery_emb``.
        ks (Sequence[int]): Values of K, each >= 1 (K beyond the gallery
            size is allowed). Defaults to (1,).
        with_map_at_r (bool): Also compute MAP@R. Defaults to True.
        chunk_size (int, optional): Queries scored at a time. Defaults to
            None: about 2**24 / G rows (a few hundred MB).

    Returns:
        dict[str, float]: ``'R@K'`` for each K and ``'MAP@R'`` (in [0, 1]),
        plus ``'num_queries'`` (queries with a relevant gallery item, the
        denominator) and ``'num_skipped'`` (queries without one).
    """
    _check(query_emb, query_labels, 'query')
    self_gallery = gallery_emb is None
    if self_gallery != (gallery_labels is None):
        raise ValueError('gallery_emb and gallery_labels must be given '
                         'together (or neither, for query = gallery)')
    if self_gallery:
        gallery_emb, gallery_labels = query_emb, query_labels
    else:
        _check(gallery_emb, gallery_labels, 'gallery')
        if gallery_emb.shape[1] != query_emb.shape[1]:
            raise ValueError(
                f'query_emb has dimension {query_emb.shape[1]} but '
                f'gallery_emb {gallery_emb.shape[1]}')
    ks = _check_ks(ks)
    num_gallery = gallery_emb.shape[0]
    if num_gallery >= 2**_INDEX_BITS - 1:
        raise ValueError(f'gallery of {num_gallery} items is too large')
    if chunk_size is None:
        chunk_size = max(1, _DEFAULT_CHUNK_ELEMENTS // max(num_gallery, 1))
    elif isinstance(chunk_size, bool) or not isinstance(
            chunk_size, int) or chunk_size < 1:
        raise ValueError(f'chunk_size must be an int >= 1, got {chunk_size!r}')

    device = query_emb.device
    gallery = gallery_emb.to(device=device, dtype=torch.float32)
    gallery_labels = gallery_labels.to(device=device, dtype=torch.int64)
    query_labels = query_labels.to(device=device, dtype=torch.int64)
    members = _Members(gallery_labels)
    ks_tensor = torch.tensor(ks, device=device)
    hits = torch.zeros(len(ks), dtype=torch.int64, device=device)
    ap_values = []  # AP@R of each query, summed exactly at the end
    num_valid = 0
    for start in range(0, query_emb.shape[0], chunk_size):
        stop = min(start + chunk_size, query_emb.shape[0])
        rows = torch.arange(stop - start, device=device)
        self_cols = rows + start if self_gallery else None
        cols, present = members(query_labels[start:stop], self_cols)
        num_rel = present.sum(1)
        has_rel = num_rel > 0
        num_valid += int(has_rel.sum())
        if not bool(has_rel.any()):
            continue
        scores = query_emb[start:stop].to(torch.float32) @ gallery.t()
        if self_gallery:
            scores[rows, self_cols] = float('-inf')
        width = min(max(int(num_rel.max()) + 1, _MIN_WIDTH), num_gallery)
        cand_vals, cand_cols = _candidates(scores, width)
        first_rank = _first_relevant_rank(scores, cols, present, has_rel,
                                          cand_vals, cand_cols)
        hit = (first_rank[:, None] <= ks_tensor[None, :]) & has_rel[:, None]
        hits += hit.sum(0)
        if with_map_at_r:
            ap = _ap_at_r(scores, cand_vals, cand_cols, gallery_labels,
                          query_labels[start:stop], num_rel)
            ap_values += ap[has_rel].tolist()
    denom = max(num_valid, 1)
    out = {f'R@{k}': int(hits[i]) / denom for i, k in enumerate(ks)}
    if with_map_at_r:
        # exactly rounded sum: the result does not depend on chunk_size
        out['MAP@R'] = math.fsum(ap_values) / denom
    out['num_queries'] = num_valid
    out['num_skipped'] = query_emb.shape[0] - num_valid
    return out


def _candidates(scores: Tensor, width: int):
    """Each row's ``width`` best items, ordered by (score desc, col asc).

    ``topk`` returns the right values but an arbitrary order (and choice)
    among equal ones; sorting its columns, then stably by value, fixes the
    order inside the list. Which of several items tied at the last value
    made it into the list is arbitrary: callers only trust the list where
    no tie crosses its end.
    """
    values, cols = scores.topk(width, dim=1, sorted=True)
    cols, by_col = cols.sort(dim=1, stable=True)
    values = values.gather(1, by_col)
    values, by_value = values.sort(dim=1, descending=True, stable=True)
    return values, cols.gather(1, by_value)


def _first_relevant_rank(scores: Tensor, cols: Tensor, present: Tensor,
                         has_rel: Tensor, cand_vals: Tensor,
                         cand_cols: Tensor) -> Tensor:
    """1-based rank of each row's best relevant item (ties: lower index).

    The best relevant item (largest score, then lowest column) comes from
    the class's columns. If its score is above the last candidate's, every
    item scoring at least as high is a candidate, so the rank is counted
    there. Other rows count over the whole row: items strictly above, plus
    items tied with it at a lower column (only when a non-relevant item
    ties with it: duplicates).
    """
    values = scores.gather(1, cols).masked_fill(~present, float('-inf'))
    best = values.amax(1, keepdim=True)
    big = torch.iinfo(torch.int64).max
    tied_rel = present & (values == best)
    best_col = torch.where(tied_rel, cols, big).amin(1, keepdim=True)
    before = (cand_vals > best) | ((cand_vals == best) &
                                   (cand_cols < best_col))
    rank = before.sum(1) + 1
    outside = (has_rel & (best[:, 0] <= cand_vals[:, -1])).nonzero()[:, 0]
    if outside.numel():
        # count over the rows (a copy of them when they are few)
        many = 2 * outside.numel() > scores.shape[0]
        row_scores = scores if many else scores[outside]
        row_best = best if many else best[outside]
        # int32 sums are faster than int64 ones (gallery < 2**31 items)
        above = (row_scores > row_best).sum(1, dtype=torch.int32).long()
        equal = (row_scores == row_best).sum(1, dtype=torch.int32).long()
        if many:
            above, equal = above[outside], equal[outside]
        foreign = (equal > tied_rel[outside].sum(1)).nonzero()[:, 0]
        if foreign.numel():
            rows = outside[foreign]
            col_ids = torch.arange(scores.shape[1], device=scores.device)
            tied = (scores[rows] == best[rows]) & (
                col_ids[None, :] < best_col[rows])
            above[foreign] += tied.sum(1)
        rank[outside] = above + 1
    return rank


def _ap_at_r(scores: Tensor, cand_vals: Tensor, cand_cols: Tensor,
             gallery_labels: Tensor, labels: Tensor,
             num_rel: Tensor) -> Tensor:
    """AP@R of each row (0 where R = 0) from the candidate lists.

    The candidates are the exact first R items unless a tie crosses
    position R (the (R+1)-th score equals the R-th); those rows are
    re-ranked by index over the whole row with int64 keys.
    """
    width = cand_vals.shape[1]
    r_idx = (num_rel - 1).clamp(min=0)[:, None]
    crossing = (num_rel > 0) & (num_rel < width)
    crossing &= cand_vals.gather(1, (r_idx + 1).clamp(max=width - 1))[:, 0] \
        == cand_vals.gather(1, r_idx)[:, 0]
    order = cand_cols
    rows = crossing.nonzero()[:, 0]
    if rows.numel():
        col_ids = torch.arange(scores.shape[1], device=scores.device)
        keys = _keys(scores[rows], col_ids[None, :])
        order = order.clone()
        order[rows] = keys.topk(width, dim=1, sorted=True).indices
    rel = gallery_labels[order] == labels[:, None]
    positions = torch.arange(1, width + 1, device=scores.device)
    rel &= positions[None, :] <= num_rel[:, None]
    precision = rel.cumsum(1).to(torch.float64) / positions[None, :]
    return (precision * rel).sum(1) / num_rel.clamp(min=1).to(torch.float64)


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
    ks = _check_ks(ks)
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
