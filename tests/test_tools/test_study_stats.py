"""The study tool's multiplicity corrections against a hand computation:
Bonferroni t intervals (scipy.stats.t quantiles), paired t-test p-values
and Holm's step-down on a worked example with known p-values."""
import math

import pytest
from scipy import stats as sps


@pytest.fixture(scope='module')
def study():
    from rankloss_lab import study
    return study


def _diff(study):
    # per-seed differences 1, 2, 3: mean 2, sd 1, se 1 / sqrt(3), 2 df
    return study.paired_difference({0: 3.0, 1: 5.0, 2: 7.0},
                                   {0: 2.0, 1: 3.0, 2: 4.0})


def test_bonferroni_intervals_by_hand(study):
    d = _diff(study)
    se = 1 / math.sqrt(3)
    assert d['se'] == pytest.approx(se) and d['seeds'] == [0, 1, 2]
    # m = 4 comparisons: level 1 - 0.05 / 4 = 0.9875, two-sided quantile
    # t(1 - 0.0125 / 2, 2) = 8.8602...
    q = sps.t.ppf(1 - 0.05 / 4 / 2, 2)
    assert q == pytest.approx(8.860, abs=1e-3)
    low, high = study.t_interval(d, 1 - 0.05 / 4)
    assert (low, high) == pytest.approx((2 - q * se, 2 + q * se))
    # one-sided ('greater'): [mean - t(1 - 0.05 / 4, 2) se, +inf)
    q1 = sps.t.ppf(1 - 0.05 / 4, 2)
    low, high = study.t_interval(d, 1 - 0.05 / 4, 'greater')
    assert low == pytest.approx(2 - q1 * se) and high == math.inf
    low, high = study.t_interval(d, 1 - 0.05 / 4, 'less')
    assert low == -math.inf and high == pytest.approx(2 + q1 * se)
    # level 0.95, two-sided: the raw interval of paired_difference
    assert study.t_interval(d, 0.95) == pytest.approx((d['low'], d['high']))


def test_paired_t_pvalues_by_hand(study):
    d = _diff(study)
    t = 2 / (1 / math.sqrt(3))  # 3.4641
    assert study.paired_t_pvalue(d, 'greater') == pytest.approx(
        sps.t.sf(t, 2))
    assert study.paired_t_pvalue(d, 'greater') == pytest.approx(0.0371,
                                                                abs=1e-4)
    assert study.paired_t_pvalue(d, 'two-sided') == pytest.approx(
        2 * sps.t.sf(t, 2))
    assert study.paired_t_pvalue(d, 'less') == pytest.approx(sps.t.cdf(t, 2))
    # the same as scipy's paired test
    ref = sps.ttest_rel([3.0, 5.0, 7.0], [2.0, 3.0, 4.0])
    assert study.paired_t_pvalue(d) == pytest.approx(ref.pvalue)
    # every pair differs by the same amount: se 0
    flat = study.paired_difference({0: 2.0, 1: 3.0}, {0: 1.0, 1: 2.0})
    assert study.paired_t_pvalue(flat, 'greater') == 0.0
    assert study.paired_t_pvalue(flat, 'less') == 1.0
    same = study.paired_difference({0: 1.0, 1: 2.0}, {0: 1.0, 1: 2.0})
    assert study.paired_t_pvalue(same) == 1.0


def test_holm_worked_example(study):
    # p = 0.01, 0.04, 0.03, 0.005 (m = 4). Sorted: 0.005 x 4 = 0.02,
    # 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> max so far 0.06
    adjusted = study.holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # at alpha 0.05 Holm rejects the two smallest; Bonferroni (p x 4) too,
    # but Holm rejects 0.0125 where Bonferroni (0.05 x ... ) does not:
    # p = 0.0125, 0.02: Bonferroni 0.025, 0.04; Holm 0.025, 0.025
    assert study.holm([0.0125, 0.02]) == pytest.approx([0.025, 0.025])
    assert study.holm([0.5, 0.6]) == [1.0, 1.0]  # capped at 1
    assert study.holm([]) == []


def test_corrected_family(study):
    d = _diff(study)
    family = study.corrected_family([
        dict(method='a', alternative='greater', diff=d),
        dict(method='b', alternative='two-sided', diff=d),
        dict(method='c', alternative='greater', diff=None)])  # not measured
    assert [r['m'] for r in family] == [3, 3, 3]
    a, b, c = family
    se, p1 = 1 / math.sqrt(3), sps.t.sf(2 * math.sqrt(3), 2)
    assert a['p'] == pytest.approx(p1) and b['p'] == pytest.approx(2 * p1)
    # Holm: sorted p1 x 3, 2 p1 x 2, 1 (missing) x 1
    assert a['p_holm'] == pytest.approx(3 * p1)
    assert b['p_holm'] == pytest.approx(4 * p1)
    assert 'p' not in c and 'p_holm' not in c
    assert a['significant'] is False  # 3 x 0.0371 > 0.05
    assert a['bonf_level'] == pytest.approx(1 - 0.05 / 3)
    assert a['bonf_low'] == pytest.approx(
        2 - sps.t.ppf(1 - 0.05 / 3, 2) * se) and a['bonf_high'] == math.inf
    assert b['bonf_high'] == pytest.approx(
        2 + sps.t.ppf(1 - 0.05 / 6, 2) * se)
    assert (a['low'], a['high']) == pytest.approx((d['low'], d['high']))


def test_retrieval_report_gives_corrected_intervals(tmp_path):
    from rankloss_lab import retrieval_study as tool
    config = 'configs/retrieval/retrieval_r18-w16_rambo-log_20e_' \
        'digit-instances.py'
    path = tmp_path / 'mini.py'
    path.write_text(f"""
seeds = [0, 1, 2]
baseline = 'a'
methods = dict(a=dict(config='{config}', lrs=[0.001]),
               b=dict(config='{config}', lrs=[0.001]),
               c=dict(config='{config}', lrs=[0.001]))
""")
    spec = tool.load_spec(str(path))
    r1 = dict(a=[0.20, 0.30, 0.40], b=[0.21, 0.32, 0.43],
              c=[0.20, 0.25, 0.45])
    results = {}
    for m, values in r1.items():
        for seed, v in enumerate(values):
            metrics = {'R@1': v, 'R@8': v, 'MAP@R': v}
            results[(m, 0.001, seed)] = {
                tool.TRAINED: metrics, tool.PIXELS: metrics,
                tool.UNTRAINED: metrics, 'last_val_r1': 0.1, 'seconds': 1.0}
    md = open(tool.write_report(spec, results,
                                str(tmp_path / 'out'))['md']).read()
    # b - a: 1, 2, 3 points; m = 2, two-sided, t(1 - 0.0125, 2)
    q = sps.t.ppf(1 - 0.05 / 4, 2) / math.sqrt(3)
    half = 4.302653 / math.sqrt(3)  # the raw 95 % interval
    assert f'+2.0 [{2 - half:+.1f}, {2 + half:+.1f}] | ' \
        f'[{2 - q:+.1f}, {2 + q:+.1f}] (m = 2) |' in md
    assert '2 comparisons with a' in md and 'selection and test seeds ' \
        'overlap' in md
