"""Brute-force references of AP Loss, aLRP Loss and Rank & Sort Loss.

Written from the papers' definitions with explicit loops over all pairs and
an explicit matrix of primary terms ``L[i, j]``; O(n^2), float64, for small
inputs only. The update of every score is ``(sum_i L[i, m] - sum_j L[m,
j]) / |P|`` (the identity update of the papers).
"""
import torch


def step(x, delta):
    return min(max(x / (2 * delta) + 0.5, 0.0), 1.0)


def reference(scores, positives, delta, mode, negatives=None, quality=None,
              loc_error=None):
    """(value dict, update (n,), primary matrix (n, n)) of one ranking."""
    s = [float(v) for v in scores]
    n = len(s)
    pos = [i for i in range(n) if bool(positives[i])]
    if negatives is None:
        neg = [j for j in range(n) if not bool(positives[j])]
    else:
        neg = [j for j in range(n) if bool(negatives[j])]
    y = {i: 1.0 for i in pos}
    e = {i: 0.0 for i in pos}
    if quality is not None:
        y = {i: float(q) for i, q in zip(pos, quality)}
    if loc_error is not None:
        e = {i: float(q) for i, q in zip(pos, loc_error)}
    L = torch.zeros(n, n, dtype=torch.float64)
    ranking = sorting = loc = 0.0
    loc_weight = {k: 0.0 for k in pos}
    for i in pos:
        h = {j: step(s[j] - s[i], delta) for j in range(n)}
        nfp = sum(h[j] for j in neg)
        rank_plus = 1 + sum(h[k] for k in pos if k != i)
        rank = rank_plus + nfp
        ranking += nfp / rank
        if mode in ('ap', 'rs'):
            error = nfp / rank  # the ranking error l_R(i)
        else:  # alrp
            e_loc = e[i] + sum(h[k] * e[k] for k in pos if k != i)
            loc += e_loc / rank
            loc_weight[i] += 1 / rank
            for k in pos:
                if k != i:
                    loc_weight[k] += h[k] / rank
            error = (nfp + e_loc) / rank  # l_LRP(i)
        if nfp > 0:
            for j in neg:
                L[i, j] = error * h[j] / nfp
        if mode == 'rs':
            others = [k for k in pos if k != i]
            current = ((1 - y[i]) + sum(h[k] * (1 - y[k]) for k in others)) \
                / rank_plus
            higher = [k for k in others if y[k] >= y[i]]
            target = ((1 - y[i]) + sum(h[k] * (1 - y[k]) for k in higher)) \
                / (1 + sum(h[k] for k in higher))
            lower = [k for k in others if y[k] < y[i]]
            share = sum(h[k] for k in lower)
            sorting += current - target
            if share > 0:
                for k in lower:
                    L[i, k] = (current - target) * h[k] / share
    num_pos = max(len(pos), 1)
    update = (L.sum(0) - L.sum(1)) / num_pos
    values = dict(ranking=ranking / num_pos, sorting=sorting / num_pos,
                  loc=loc / num_pos)
    values['loss'] = values['ranking'] + values['sorting']
    values['loc_weight'] = torch.tensor(
        [loc_weight[k] / num_pos for k in pos], dtype=torch.float64)
    return values, update, L
