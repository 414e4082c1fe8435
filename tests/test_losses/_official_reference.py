"""Float64 references of the authors' Rank & Sort and aLRP algorithms.

Written for these tests from the algorithm descriptions (the shape of the
authors' code, kemaloksuz/RankSortLoss and kemaloksuz/aLRPLoss, no code
taken from it): the relevant negatives are those with a score >= the
lowest positive score minus ``delta``; one explicit loop over the
positives in ascending score order computes each positive's ranks and
errors and accumulates the updates it causes into a gradient list; all is
divided by ``|P|``. Plain Python floats, O(P n): small inputs only.

Every option of the package's losses is a parameter here, so that both the
authors' defaults and the earlier behaviour are covered:
``self_relation``, ``zero_quality_as_negative`` (RS);
``own_loc_in_update``, ``loc_order``, ``tau`` (aLRP).

The test inputs both loss files compare on are here too: the rankings
(:func:`official_case`, :data:`CASES`) and a detection batch flattened as
the losses rank it (:func:`flat_ranking`).
"""
import torch

#: the rankings of :func:`official_case`
CASES = ('random', 'ties', 'one_positive', 'zero_values', 'equal_values')


def official_case(case, seed=0, n=40, equal=0.6):
    """(scores, positives, negatives, values) of one float64 ranking.

    ``values`` (P,) in [0, 1] are the positives' labels (RS) or
    localisation errors (aLRP), in index order. Cases: ``'random'``
    (N(0, 1.5) scores, some scores in neither set), ``'ties'`` (scores on
    a grid of 0.5: ties between positives and with negatives, two equal
    values), ``'one_positive'``, ``'zero_values'`` (every third value 0),
    ``'equal_values'`` (all ``equal``).
    """
    gen = torch.Generator().manual_seed(seed)
    s = torch.randn(n, generator=gen, dtype=torch.float64) * 1.5
    if case == 'ties':
        s = (s * 2).round() / 2
    positives = torch.rand(n, generator=gen) < 0.3
    positives[:2] = torch.tensor([True, False])
    if case == 'one_positive':
        positives[1:] = False
    negatives = ~positives & (torch.rand(n, generator=gen) < 0.9)
    num_pos = int(positives.sum())
    values = torch.rand(num_pos, generator=gen, dtype=torch.float64)
    if case == 'ties' and num_pos > 2:
        values[1] = values[0]
    if case == 'zero_values':
        values[::3] = 0
    if case == 'equal_values':
        values.fill_(equal)
    return s, positives, negatives, values


def flat_ranking(cls_score, labels, weight=None):
    """A detection loss's ranking by hand: (scores, positives, negatives,
    rows) of the flattened (N, C) scores of ``cls_score`` (N, C + 1): the
    score of each row's label is a positive (``rows``: those rows,
    ascending), every other score of a row of weight > 0 a negative; rows
    of weight 0 are in neither set."""
    num_classes = cls_score.shape[1] - 1
    scores = cls_score.detach()[:, :num_classes]
    valid = torch.ones_like(labels, dtype=torch.bool) if weight is None \
        else weight > 0
    rows = ((labels < num_classes) & valid).nonzero().squeeze(1)
    pos = torch.zeros_like(scores, dtype=torch.bool)
    pos[rows, labels[rows]] = True
    neg = ~pos & valid[:, None]
    return scores.reshape(-1), pos.reshape(-1), neg.reshape(-1), rows


def step(x, delta):
    """The smoothed step ``H(x)``."""
    return min(max(x / (2 * delta) + 0.5, 0.0), 1.0)


def _members(scores, positives, negatives):
    s = [float(v) for v in scores]
    n = len(s)
    pos = [i for i in range(n) if bool(positives[i])]
    if negatives is None:
        neg = [j for j in range(n) if not bool(positives[j])]
    else:
        neg = [j for j in range(n) if bool(negatives[j])]
    return s, pos, neg


def _relevant(s, pos, neg, delta):
    """The authors' ``relevant_bg``: the negatives that can be above."""
    threshold = min(s[i] for i in pos) - delta
    return [j for j in neg if s[j] >= threshold]


def rank_sort_reference(scores, positives, quality, delta=0.5,
                        self_relation=0.5, zero_quality_as_negative=True,
                        negatives=None):
    """Rank & Sort Loss: ``(values, update)``.

    Args:
        scores: (n,) scores.
        positives: (n,) bool.
        quality: (P,) labels of the positives in index order.
        delta (float): Half-width of the step.
        self_relation (float): ``H(x_ii)`` (0.5: the authors').
        zero_quality_as_negative (bool): A positive with label 0 is a
            negative (the authors' ``labels > 0``).
        negatives: (n,) bool or None (``~positives``).

    Returns:
        tuple: dict with ``loss``, ``ranking``, ``sorting`` and the update
        (n,) float64.
    """
    s, pos, neg = _members(scores, positives, negatives)
    y = {i: float(q) for i, q in zip(pos, quality)}
    if zero_quality_as_negative:
        neg = sorted(neg + [i for i in pos if y[i] == 0])
        pos = [i for i in pos if y[i] > 0]
    grad = [0.0] * len(s)
    if not pos:
        return dict(loss=0.0, ranking=0.0, sorting=0.0), torch.tensor(
            grad, dtype=torch.float64)
    relevant = _relevant(s, pos, neg, delta)
    ranking_error, sorting_error = {}, {}
    for i in sorted(pos, key=lambda k: s[k]):
        fg_rel = {k: self_relation if k == i else step(s[k] - s[i], delta)
                  for k in pos}
        bg_rel = {j: step(s[j] - s[i], delta) for j in relevant}
        rank_pos = sum(fg_rel.values())
        fp_num = sum(bg_rel.values())
        rank = rank_pos + fp_num
        ranking_error[i] = fp_num / rank
        current = sum(fg_rel[k] * (1 - y[k]) for k in pos) / rank_pos
        target_rel = {k: fg_rel[k] for k in pos if y[k] >= y[i]}
        target = sum(t * (1 - y[k]) for k, t in target_rel.items()) / \
            sum(target_rel.values())
        sorting_error[i] = current - target
        if fp_num > 1e-10:
            grad[i] -= ranking_error[i]
            for j in relevant:
                grad[j] += bg_rel[j] * ranking_error[i] / fp_num
        missorted = {k: fg_rel[k] for k in pos if y[k] < y[i]}
        pmf_sum = sum(missorted.values())
        if pmf_sum > 1e-10:
            grad[i] -= sorting_error[i]
            for k, m in missorted.items():
                grad[k] += m * sorting_error[i] / pmf_sum
    num_pos = len(pos)
    ranking = sum(ranking_error.values()) / num_pos
    sorting = sum(sorting_error.values()) / num_pos
    update = torch.tensor([g / num_pos for g in grad], dtype=torch.float64)
    return dict(loss=ranking + sorting, ranking=ranking,
                sorting=sorting), update


def alrp_reference(scores, positives, loc_error, delta=1.0,
                   own_loc_in_update=False, loc_order='hard', tau=0.0,
                   negatives=None):
    """aLRP Loss: ``(values, update)``.

    Args:
        scores: (n,) scores.
        positives: (n,) bool.
        loc_error: (P,) localisation errors of the positives in index
            order, before the division by ``1 - tau``.
        delta (float): Half-width of the step.
        own_loc_in_update (bool): ``e_i`` in positive ``i``'s update.
        loc_order (str): 'hard' (score descending, ties: lower index
            first) or 'smoothed'.
        tau (float): The errors are divided by ``1 - tau``.
        negatives: (n,) bool or None (``~positives``).

    Returns:
        tuple: dict with ``cls`` (the classification component), ``loc``
        (the localisation component), ``loc_weight`` ((P,) tensor, d loc /
        d loc_error, ranks fixed, w.r.t. the errors as given) and the
        update (n,) float64 of the scores.
    """
    s, pos, neg = _members(scores, positives, negatives)
    e = {i: float(v) / (1 - tau) for i, v in zip(pos, loc_error)}
    grad = [0.0] * len(s)
    if not pos:
        return dict(cls=0.0, loc=0.0, loc_weight=torch.zeros(
            0, dtype=torch.float64)), torch.tensor(grad, dtype=torch.float64)
    relevant = _relevant(s, pos, neg, delta)
    rank, cls = {}, 0.0
    for i in sorted(pos, key=lambda k: s[k]):
        fg_rel = {k: step(s[k] - s[i], delta) for k in pos if k != i}
        bg_rel = {j: step(s[j] - s[i], delta) for j in relevant}
        fp_num = sum(bg_rel.values())
        rank[i] = 1 + sum(fg_rel.values()) + fp_num
        cls += fp_num / rank[i]
        if fp_num > 1e-5:
            amount = (sum(h * e[k] for k, h in fg_rel.items()) + fp_num +
                      (e[i] if own_loc_in_update else 0.0)) / rank[i]
            grad[i] -= amount
            for j in relevant:
                grad[j] += bg_rel[j] * amount / fp_num
    # localisation component, ranks fixed
    num_pos = len(pos)
    hard = sorted(pos, key=lambda k: (-s[k], k))
    place = {k: p for p, k in enumerate(hard)}
    loc, weight = 0.0, {k: 0.0 for k in pos}
    for i in pos:
        if loc_order == 'hard':
            share = {k: 1.0 for k in pos if place[k] <= place[i]}
        else:
            share = {k: step(s[k] - s[i], delta) for k in pos if k != i}
            share[i] = 1.0
        loc += sum(w * e[k] for k, w in share.items()) / rank[i]
        for k, w in share.items():
            weight[k] += w / rank[i] / (1 - tau)
    update = torch.tensor([g / num_pos for g in grad], dtype=torch.float64)
    return dict(cls=cls / num_pos, loc=loc / num_pos,
                loc_weight=torch.tensor([weight[k] / num_pos for k in pos],
                                        dtype=torch.float64)), update
