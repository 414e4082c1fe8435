"""Paired statistics of the studies (:mod:`rankloss_lab.study`,
:mod:`rankloss_lab.retrieval_study`): mean and sd over seeds, the paired
difference and its t interval, the paired t-test, exact sign and Wilcoxon
signed-rank tests, the collapse rule, and Bonferroni / Holm corrections.
"""
import math
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ['ALTERNATIVES', 'mean_std', 'mean_std_text', 't_quantile',
           'paired_difference', 't_interval', 'paired_t_pvalue', 'holm',
           'corrected_family', 'interval_text', 'bounds_text', 'pct',
           'ci_text', 'COLLAPSE_BELOW', 'COLLAPSE_FRACTION', 'median',
           'collapse_floor', 'trained', 'trained_count', 'bimodal',
           'trained_text', 'mean_std_trained_text', 'bimodal_texts',
           'sign_test', 'signed_rank_test']

ALTERNATIVES = ('greater', 'less', 'two-sided')

#: A value that shows a run learnt nothing whatever it is compared with
#: (a fraction, e.g. AP50: one point); also the val floor of a selection
#: run (:mod:`rankloss_lab.study.selection`).
COLLAPSE_BELOW = 0.01

#: A test run collapsed when its value is below this fraction of the
#: reference median (:func:`collapse_floor`): the one definition of a
#: collapse in a comparison, the results table and the verdict.
COLLAPSE_FRACTION = 0.25


def _bad_alternative(alternative: str) -> ValueError:
    return ValueError(f'alternative must be one of {ALTERNATIVES}, got '
                      f'{alternative!r}')


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError('the median of no values')
    return (ordered[(n - 1) // 2] + ordered[n // 2]) / 2


def collapse_floor(*sides: Sequence[float]) -> float:
    """The value below which a run of a comparison collapsed:
    :data:`COLLAPSE_FRACTION` of the largest median of ``sides`` (a
    baseline that itself collapsed is no reference), at least
    :data:`COLLAPSE_BELOW`."""
    ref = max(median(s) for s in sides if len(s))
    return max(COLLAPSE_BELOW, COLLAPSE_FRACTION * ref)


def trained(value: float, floor: float) -> bool:
    """Whether one run trained: its value is at least ``floor``."""
    return value >= floor


def trained_count(values: Sequence[float], floor: float) -> Tuple[int, int]:
    """``(k, n)``: how many of the ``n`` runs trained."""
    return sum(trained(v, floor) for v in values), len(values)


def bimodal(values: Sequence[float], floor: float) -> bool:
    """Some runs trained and some collapsed: a mean over them is no result."""
    k, n = trained_count(values, floor)
    return 0 < k < n


def trained_text(values: Sequence[float], floor: float) -> str:
    """``'k of n seeds trained'``."""
    k, n = trained_count(values, floor)
    return f'{k} of {n} seeds trained'


def bimodal_texts(sides: Dict[str, Sequence[float]]) -> Dict[str, str]:
    """``{name: 'k of n seeds trained'}`` of the :func:`bimodal` sides
    (name: its values), the floor taken from all the sides."""
    floor = collapse_floor(*sides.values())
    return {name: trained_text(values, floor)
            for name, values in sides.items() if bimodal(values, floor)}


def mean_std_trained_text(values: Sequence[float], floor: float) -> str:
    """:func:`mean_std_text`, and :func:`trained_text` where runs collapsed."""
    k, n = trained_count(values, floor)
    text = mean_std_text(values)
    return text if k == n else f'{text}, {trained_text(values, floor)}'


def _tail(counts: Dict[float, int], observed: float, total: int,
          alternative: str) -> float:
    """p-value from the exact null distribution ``counts`` ({statistic:
    number of equally likely outcomes}), large when the method is better."""
    mean = sum(k * c for k, c in counts.items()) / total
    eps = 1e-9
    if alternative == 'greater':
        hits = sum(c for k, c in counts.items() if k >= observed - eps)
    elif alternative == 'less':
        hits = sum(c for k, c in counts.items() if k <= observed + eps)
    elif alternative == 'two-sided':
        hits = sum(c for k, c in counts.items()
                   if abs(k - mean) >= abs(observed - mean) - eps)
    else:
        raise _bad_alternative(alternative)
    return min(1.0, hits / total)


def sign_test(diffs: Sequence[float], alternative: str = 'two-sided') -> float:
    """Exact sign-test p-value of paired differences (zeros dropped): the
    number of positive differences against Binomial(n, 1/2)."""
    nonzero = [d for d in diffs if d != 0]
    n = len(nonzero)
    if n == 0:
        return 1.0
    counts = {k: math.comb(n, k) for k in range(n + 1)}
    return _tail(counts, sum(d > 0 for d in nonzero), 2**n, alternative)


def signed_rank_test(diffs: Sequence[float],
                     alternative: str = 'two-sided') -> float:
    """Exact Wilcoxon signed-rank p-value of paired differences: zeros
    dropped, tied magnitudes given their mid-rank, the sum of the positive
    ranks against its distribution over all 2^n sign assignments (up to
    20 differences)."""
    nonzero = [d for d in diffs if d != 0]
    n = len(nonzero)
    if n == 0:
        return 1.0
    if n > 20:
        raise ValueError(f'exact signed-rank test of {n} differences: at '
                         'most 20')
    order = sorted(range(n), key=lambda i: abs(nonzero[i]))
    ranks = [0.0] * n
    i = 0
    while i < n:  # mid-ranks of tied magnitudes
        j = i
        while j + 1 < n and abs(nonzero[order[j + 1]]) == abs(
                nonzero[order[i]]):
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    counts: Dict[float, int] = {0.0: 1}
    for r in ranks:  # the distribution of the positive rank sum
        nxt: Dict[float, int] = {}
        for s, c in counts.items():
            for v in (s, s + r):
                nxt[v] = nxt.get(v, 0) + c
        counts = nxt
    observed = sum(r for r, d in zip(ranks, nonzero) if d > 0)
    return _tail(counts, observed, 2**n, alternative)


def t_quantile(df: int, q: float = 0.975) -> float:
    from scipy import stats
    return float(stats.t.ppf(q, df))


def mean_std(values: Sequence[float]) -> Tuple[float, float]:
    """Mean and sample standard deviation (n - 1; NaN for one value)."""
    n = len(values)
    if n == 0:
        return float('nan'), float('nan')
    mean = sum(values) / n
    if n == 1:
        return mean, float('nan')
    return mean, math.sqrt(sum((v - mean)**2 for v in values) / (n - 1))


def mean_std_text(values: Sequence[float]) -> str:
    """``mean ± std`` of fractions in percent (one value: the value alone)."""
    mean, std = mean_std([100 * v for v in values])
    return f'{mean:.1f}' if len(values) < 2 else f'{mean:.1f} ± {std:.1f}'


def paired_difference(method: Dict[int, float], baseline: Dict[int, float],
                      confidence: float = 0.95) -> Optional[dict]:
    """Mean of per-seed differences and its t interval; None under 2 pairs."""
    seeds = sorted(set(method) & set(baseline))
    if len(seeds) < 2:
        return None
    diffs = [method[s] - baseline[s] for s in seeds]
    mean, std = mean_std(diffs)
    se = std / math.sqrt(len(diffs))
    half = t_quantile(len(diffs) - 1, 0.5 + confidence / 2) * se
    return dict(n=len(diffs), mean=mean, std=std, se=se, low=mean - half,
                high=mean + half, diffs=diffs, seeds=seeds)


def t_interval(diff: dict, level: float,
               alternative: str = 'two-sided') -> Tuple[float, float]:
    """The t interval of a ``paired_difference`` at ``level``.

    Two-sided: mean -+ t(1 - (1 - level) / 2, n - 1) * se. One-sided, as
    its test: 'greater' gives [mean - t(level, n - 1) * se, +inf), 'less'
    (-inf, mean + t(level, n - 1) * se].
    """
    df = diff['n'] - 1
    if alternative == 'two-sided':
        half = t_quantile(df, 0.5 + level / 2) * diff['se']
        return diff['mean'] - half, diff['mean'] + half
    half = t_quantile(df, level) * diff['se']
    if alternative == 'greater':
        return diff['mean'] - half, math.inf
    if alternative == 'less':
        return -math.inf, diff['mean'] + half
    raise _bad_alternative(alternative)


def paired_t_pvalue(diff: dict, alternative: str = 'two-sided') -> float:
    """p-value of the paired t-test of a ``paired_difference``: t = mean /
    se with n - 1 degrees of freedom ('greater': the method is better)."""
    from scipy import stats
    if diff['se'] > 0:
        t = diff['mean'] / diff['se']
    else:  # every pair differs by the same amount
        t = 0.0 if diff['mean'] == 0 else math.copysign(math.inf,
                                                        diff['mean'])
    df = diff['n'] - 1
    if alternative == 'greater':
        return float(stats.t.sf(t, df))
    if alternative == 'less':
        return float(stats.t.cdf(t, df))
    if alternative == 'two-sided':
        return min(1.0, float(2 * stats.t.sf(abs(t), df)))
    raise _bad_alternative(alternative)


def holm(pvalues: Sequence[float]) -> List[float]:
    """Holm's step-down adjusted p-values, in the input order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def corrected_family(comparisons: List[dict], alpha: float = 0.05,
                     confidence: float = 0.95) -> List[dict]:
    """Raw and multiplicity-corrected statistics of one family.

    ``comparisons``: dicts with ``diff`` (a ``paired_difference``, or None if
    not measured: counted with p = 1) and ``alternative``. Each new dict gets
    ``low``, ``high`` (the raw t interval), ``bonf_low``, ``bonf_high`` (at
    1 - alpha / m, one-sided for a one-sided alternative), ``p``, ``p_holm``
    and ``significant`` (p_holm <= alpha).
    """
    m = len(comparisons)
    out = []
    for c in comparisons:
        row = dict(c, m=m, alpha=alpha, bonf_level=1 - alpha / m)
        diff = c.get('diff')
        if diff is not None:
            row['low'], row['high'] = t_interval(diff, confidence)
            row['bonf_low'], row['bonf_high'] = t_interval(
                diff, 1 - alpha / m, c['alternative'])
            row['p'] = paired_t_pvalue(diff, c['alternative'])
        out.append(row)
    adjusted = holm([r.get('p', 1.0) for r in out])
    for row, p_holm in zip(out, adjusted):
        if 'p' in row:
            row['p_holm'] = p_holm
            row['significant'] = p_holm <= alpha
    return out


def pct(value: float) -> str:
    """``+4.1``: a fraction in signed points, one decimal."""
    return f'{100 * value:+.1f}'


def ci_text(est: dict) -> str:
    """``+4.1 [+0.3, +7.9]``: ``est``'s mean, low and high in points."""
    return f'{pct(est["mean"])} [{pct(est["low"])}, {pct(est["high"])}]'


def bounds_text(low: float, high: float) -> str:
    """``[low, high]`` in points; an infinite end is open."""
    left = '(' if low == -math.inf else '['
    right = ')' if high == math.inf else ']'
    low, high = ({math.inf: '+∞', -math.inf: '-∞'}.get(v) or pct(v)
                 for v in (low, high))
    return f'{left}{low}, {high}{right}'


def interval_text(c: dict) -> str:
    """The Bonferroni ``[low, high] (m = 3)`` of a family member."""
    return f"{bounds_text(c['bonf_low'], c['bonf_high'])} (m = {c['m']})"
