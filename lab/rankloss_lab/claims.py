"""Claims tested more than once: every pre-registered test and one pooled
estimate, its method declared before it is computed
(``tools/analysis_tools/pooled_claim.py``).

``--freeze NAME`` writes ``docs/evidence/pooled_<name>_declaration.json`` (the
tests of :data:`CLAIMS`, a method of :data:`METHODS`, the time); ``--amend
NAME --why TEXT`` only adds a later test. The computation refuses without
that record and writes ``pooled_<name>.md`` / ``.json``.
"""
import datetime
import glob
import json
import math
import os.path as osp
from typing import Dict, List, Optional

from rankloss_lab.paths import ROOT
from . import stats
from .results import metric_column, read_csv, test_values
from .stats import ci_text

__all__ = ['CLAIMS', 'METHODS', 'ClaimError', 'freeze_claim', 'amend_claim',
           'read_claim_record', 'pooled_claim', 'claim_markdown',
           'test_outcomes', 'family_holm', 'family_markdown']

EVIDENCE = osp.join(ROOT, 'docs', 'evidence')

#: Pooling methods a record may declare.
METHODS = {
    'seed_pooled_t': (
        'Every pre-registered test seed of every listed test contributes one '
        'paired difference (method minus baseline, same seed, same test '
        'set, test AP50). The pooled estimate is the mean of all those '
        'differences with a two-sided 95 % t interval (n - 1 degrees of '
        'freedom); beside it, the number of seeds with a positive '
        'difference and the exact two-sided sign-test p-value (ties '
        'dropped). No test is left out, whatever its outcome.'),
}

#: Claims made in the verdict that were pre-registered more than once.
CLAIMS = {
    'mix_vs_ce': dict(
        claim='RaMBO + sigmoid CE (MixedRankLoss) beats cross-entropy on '
        'the box head of Faster R-CNN',
        tests=[
            dict(study='confirm_digitsvoc', hypothesis='H1'),
            dict(study='digitsvoc_rank_sort_frcnn_16e', hypothesis='H2'),
            dict(study='digitsvoc_pretrained_12e', hypothesis='H1'),
            # added by an amendment (the record says when and why)
            dict(study='digitsvoc_scratch_8e_mix', hypothesis='H1'),
        ],
        method='seed_pooled_t',
        # its declaration was committed 11 s before the first estimate,
        # when the results of its three tests were already committed
        declared_after_results=True),
}


class ClaimError(RuntimeError):
    """A claim cannot be pooled (no record, or it differs)."""


def _record_path(name: str, evidence: str = EVIDENCE) -> str:
    return osp.join(evidence, f'pooled_{name}_declaration.json')


def _claim(name: str) -> dict:
    if name not in CLAIMS:
        raise ClaimError(f'unknown claim {name!r}; known: {sorted(CLAIMS)}')
    claim = CLAIMS[name]
    if claim['method'] not in METHODS:
        raise ClaimError(f'claim {name!r}: unknown method '
                         f'{claim["method"]!r}; known: {sorted(METHODS)}')
    return claim


def freeze_claim(name: str, evidence: str = EVIDENCE,
                 now: Optional[str] = None) -> str:
    """Write the claim's pre-registration record; refuse if one exists."""
    claim = _claim(name)
    path = _record_path(name, evidence)
    if osp.exists(path):
        raise ClaimError(f'{path} exists: a pooled claim is declared once')
    _write_record(path, dict(
        claim=name, statement=claim['claim'], tests=claim['tests'],
        method=claim['method'], method_text=METHODS[claim['method']],
        frozen_at=_now(now)))
    return path


def _write_record(path: str, record: dict) -> None:
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write('\n')


def _now(now: Optional[str]) -> str:
    return now or datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec='seconds')


def _load_record(name: str, evidence: str) -> tuple:
    """``(path, record)`` of the claim's declaration; refuses without one."""
    path = _record_path(name, evidence)
    if not osp.isfile(path):
        raise ClaimError(f'{path} does not exist: declare the pooling '
                         f'method first (--freeze {name})')
    with open(path, encoding='utf-8') as f:
        return path, json.load(f)


def amend_claim(name: str, why: str, evidence: str = EVIDENCE,
                now: Optional[str] = None) -> str:
    """Add the claim's tests that its record lacks (a later pre-registered
    test of the same claim), with the time and ``why``. Refuses when the
    record lacks nothing, when a recorded test is no longer in the claim
    (tests are never removed) or when the method differs."""
    claim = _claim(name)
    path, record = _load_record(name, evidence)
    if not why.strip():
        raise ClaimError('an amendment says why (--why)')
    if record['method'] != claim['method']:
        raise ClaimError(f'{path}: method {record["method"]!r} differs from '
                         f'the claim\'s {claim["method"]!r}; a method is '
                         'declared once')
    dropped = [t for t in record['tests'] if t not in claim['tests']]
    if dropped:
        raise ClaimError(f'{path}: recorded tests {dropped} are not in the '
                         'claim: tests are never removed')
    added = [t for t in claim['tests'] if t not in record['tests']]
    if not added:
        raise ClaimError(f'{path}: the record already lists every test of '
                         f'claim {name!r}')
    record['tests'] = list(claim['tests'])
    record.setdefault('amendments', []).append(
        dict(at=_now(now), added=added, why=why.strip()))
    _write_record(path, record)
    return path


def read_claim_record(name: str, evidence: str = EVIDENCE) -> dict:
    """The claim's record, checked against :data:`CLAIMS`."""
    claim = _claim(name)
    path, record = _load_record(name, evidence)
    for key in ('tests', 'method'):
        if record.get(key) != claim[key]:
            raise ClaimError(f'{path}: {key} {record.get(key)!r} differs '
                             f'from the claim\'s {claim[key]!r}')
    return record


def _hypothesis_row(study: str, hypothesis: str, evidence: str) -> dict:
    path = osp.join(evidence, f'{study}_comparisons.csv')
    for row in read_csv(path):
        if row['family'] == 'pre-registered' and row['id'] == hypothesis:
            return row
    raise ClaimError(f'{path}: no pre-registered hypothesis {hypothesis}')


def family_holm(evidence: str = EVIDENCE) -> Dict[tuple, float]:
    """``{(study, hypothesis): p}``: Holm's adjusted p-value of every
    pre-registered test of the body of evidence (every
    ``*_comparisons.csv``) as one family, beside the per-study Holm of
    each report; a test not measured yet counts with p = 1."""
    rows = [r for path in sorted(glob.glob(osp.join(
                evidence, '*_comparisons.csv')))
            for r in read_csv(path) if r['family'] == 'pre-registered']
    adjusted = stats.holm([float(r['p']) if r['p'] else 1.0 for r in rows])
    return {(r['study'], r['id']): p for r, p in zip(rows, adjusted)}


#: The report of :func:`family_holm` in ``docs/evidence/``.
FAMILY_REPORT = 'preregistered_tests.md'


def family_markdown(evidence: str = EVIDENCE) -> str:
    """Every pre-registered test, Holm p within its study and over all."""
    family = family_holm(evidence)
    lines = [
        '# Every pre-registered test, corrected twice', '',
        f'The {len(family)} pre-registered tests of all studies (each '
        '`<study>_comparisons.csv`), with the Holm-adjusted p-value within '
        'its study (its report) and over all of them as one family '
        '(`rankloss_lab.claims.family_holm`). The verdict calls a test '
        'confirmed only where both are at most 0.05 in its direction, and '
        'words a test whose runs partly collapsed by its exact Wilcoxon '
        'signed-rank p instead; a test not measured yet counts with p = 1. '
        'Generated by '
        '`tools/analysis_tools/evidence_tables.py --write`.', '',
        '| study | test | method vs baseline | alternative | paired diff. | '
        'p (paired t) | Holm p within its study | Holm p over all | exact '
        'signed-rank p (not corrected) |',
        '|---|---|---|---|---|---|---|---|---|']
    for (study, hid), p_all in family.items():
        row = _hypothesis_row(study, hid, evidence)
        diff = (f'{100 * float(row["mean_diff"]):+.1f}'
                if row['mean_diff'] else '-')
        rank = '-'
        if row['seeds']:
            rows = read_csv(osp.join(evidence, f'{study}.csv'))
            column = metric_column(rows, row.get('metric'))
            m, b = (test_values(rows, row[k], column)
                    for k in ('method', 'baseline'))
            rank = format(stats.signed_rank_test(
                [m[int(x)] - b[int(x)] for x in row['seeds'].split()],
                row['alternative']), '.4f')
        p_raw = f'{float(row["p"]):.4g}' if row['p'] else '-'
        p_study = f'{float(row["p_holm"]):.4f}' if row['p_holm'] else '-'
        lines.append(
            f'| [{study}]({study}.md) | {hid} | {row["method"]} vs '
            f'{row["baseline"]} | {row["alternative"]} | {diff} | {p_raw} | '
            f'{p_study} | {p_all:.4f} | {rank} |')
    return '\n'.join(lines) + '\n'


def _test_values(study: str, method: str, evidence: str) -> Dict[int, float]:
    return test_values(read_csv(osp.join(evidence, f'{study}.csv')), method)


def test_outcomes(tests: List[dict], evidence: str = EVIDENCE,
                  alpha: float = 0.05) -> List[dict]:
    """Per test: its method, baseline, alternative, paired differences
    (``diff``), Holm p within its study and over all, and whether it
    confirmed the claim."""
    out, family = [], family_holm(evidence)
    for test in tests:
        row = _hypothesis_row(test['study'], test['hypothesis'], evidence)
        method = _test_values(test['study'], row['method'], evidence)
        base = _test_values(test['study'], row['baseline'], evidence)
        seeds = [int(s) for s in row['seeds'].split()]
        diff = stats.paired_difference({s: method[s] for s in seeds},
                                       {s: base[s] for s in seeds})
        p_holm = float(row['p_holm'])
        direction = {'greater': 1, 'less': -1}.get(row['alternative'], 0)
        confirmed = p_holm <= alpha and direction in (
            0, math.copysign(1, diff['mean']))
        p_family = family[test['study'], test['hypothesis']]
        out.append(dict(test, method=row['method'], baseline=row['baseline'],
                        alternative=row['alternative'], diff=diff,
                        p_holm=p_holm, confirmed=confirmed,
                        p_family=p_family, family_size=len(family),
                        confirmed_family=confirmed and p_family <= alpha,
                        method_values=[method[s] for s in seeds],
                        baseline_values=[base[s] for s in seeds]))
    return out


def seed_pooled(diffs: List[float]) -> dict:
    """The declared method (``seed_pooled_t``) over ``diffs``: their mean,
    a two-sided 95 % t interval, the positive count and the sign test."""
    mean, std = stats.mean_std(diffs)
    half = stats.t_quantile(len(diffs) - 1) * std / math.sqrt(len(diffs))
    return dict(n=len(diffs), mean=mean, low=mean - half, high=mean + half,
                positive=sum(d > 0 for d in diffs),
                sign_p=stats.sign_test(diffs))


def random_effects(groups: List[List[float]]) -> dict:
    """DerSimonian-Laird random-effects pool of the tests' mean paired
    differences with the Hartung-Knapp interval (t, k - 1 degrees of
    freedom): each test is one study of the claim; ``groups`` holds each
    test's differences (at least 2 each, at least 2 tests)."""
    pairs = [(stats.mean_std(diffs), len(diffs)) for diffs in groups]
    means = [mean for (mean, _), _ in pairs]
    variances = [std**2 / n for (_, std), n in pairs]
    k = len(means)
    w = [1 / v for v in variances]
    fixed = sum(wi * m for wi, m in zip(w, means)) / sum(w)
    q = sum(wi * (m - fixed)**2 for wi, m in zip(w, means))
    c = sum(w) - sum(wi * wi for wi in w) / sum(w)
    tau2 = max(0.0, (q - (k - 1)) / c)
    ws = [1 / (v + tau2) for v in variances]
    mean = sum(wi * m for wi, m in zip(ws, means)) / sum(ws)
    se = math.sqrt(sum(wi * (m - mean)**2 for wi, m in zip(ws, means))
                   / ((k - 1) * sum(ws)))
    half = stats.t_quantile(k - 1) * se
    return dict(k=k, n=sum(map(len, groups)), mean=mean, low=mean - half,
                high=mean + half, tau2=tau2)


def _pairs(test: dict) -> List[dict]:
    """A test's seeds as pairs: the difference and which side collapsed."""
    out = []
    floor = stats.collapse_floor(test['method_values'],
                                 test['baseline_values'])
    for seed, diff, m, b in zip(test['diff']['seeds'],
                                test['diff']['diffs'], test['method_values'],
                                test['baseline_values']):
        sides = [name for name, v in ((test['method'], m),
                                      (test['baseline'], b))
                 if not stats.trained(v, floor)]
        out.append(dict(study=test['study'], seed=seed, diff=diff,
                        collapsed=sides))
    return out


def pooled_claim(name: str, evidence: str = EVIDENCE) -> dict:
    """The claim's outcome: tests confirmed, the declared pooled estimate
    (``pooled``) and, exploratory, the estimate with amended tests
    (``amended``) and without collapsed pairs (``robust``)."""
    record = read_claim_record(name, evidence)
    tests = test_outcomes(record['tests'], evidence)
    added = [t for a in record.get('amendments', []) for t in a['added']]
    declared = [t for t in tests
                if dict(study=t['study'], hypothesis=t['hypothesis'])
                not in added]
    pairs = {t['study']: _pairs(t) for t in tests}
    collapsed = [p for ps in pairs.values() for p in ps if p['collapsed']]
    out = dict(
        claim=name, statement=record['statement'],
        frozen_at=record['frozen_at'], method=record['method'],
        method_text=record['method_text'], tests=tests,
        amendments=record.get('amendments', []),
        declared_after_results=CLAIMS[name].get('declared_after_results',
                                                False),
        confirmed=sum(t['confirmed'] for t in tests), n_tests=len(tests),
        confirmed_family=sum(t['confirmed_family'] for t in tests),
        pooled=dict(seed_pooled([d for t in declared
                                 for d in t['diff']['diffs']]),
                    tests=len(declared)),
        collapsed=collapsed)
    if added:
        out['amended'] = dict(seed_pooled([d for t in tests
                                           for d in t['diff']['diffs']]),
                              tests=len(tests))
    if collapsed:
        kept = [[p['diff'] for p in ps if not p['collapsed']]
                for ps in pairs.values()]
        out['robust'] = dict(
            without_collapsed=seed_pooled([d for g in kept for d in g]),
            random_effects=random_effects([g for g in kept if len(g) > 1]))
    return out


def collapsed_text(result: dict) -> str:
    """Which pairs collapsed, e.g. ``2 pairs in which ce did not train
    (digitsvoc_pretrained_12e seeds 1, 4)``."""
    by = {}
    for p in result['collapsed']:
        by.setdefault((', '.join(p['collapsed']), p['study']),
                      []).append(str(p['seed']))
    n = len(result['collapsed'])
    where = '; '.join(f'{side} did not train in {study} seed'
                      f'{"s" if len(seeds) > 1 else ""} {", ".join(seeds)}'
                      for (side, study), seeds in by.items())
    return f'{n} pair{"s" if n != 1 else ""} collapsed ({where})'


def _thresholds(test: dict) -> str:
    from .thresholds import thresholds_text
    text = thresholds_text(test['study'], test['method'], test['baseline'])
    return text.replace('tested at score_thr ', '') or '-'


def pooled_label(result: dict) -> str:
    """What the declared pooled estimate is: pre-registered or not."""
    return ('pooled estimate declared after the results (not '
            'pre-registered)' if result.get('declared_after_results')
            else 'pre-registered pooled estimate')


def claim_markdown(result: dict) -> str:
    """The claim's report."""
    p = result['pooled']
    lines = [
        f'# Pooled claim `{result["claim"]}`', '',
        f'Claim: {result["statement"]}.', '',
        f'Method declared in `pooled_{result["claim"]}_declaration.json`'
        f', frozen {result["frozen_at"]}, before this estimate was computed:'
        f' {result["method_text"]}', '']
    if result.get('declared_after_results'):
        lines += ['The declaration was written when the test results of its '
                  'tests were already known: the pooled estimate summarises '
                  'them; it was not predicted.', '']
    for a in result.get('amendments', []):
        added = ', '.join(f'{t["study"]} {t["hypothesis"]}'
                          for t in a['added'])
        lines += [f'Amended {a["at"]}: added {added}. {a["why"]} The '
                  'estimate with the added tests is exploratory: the '
                  'amendment was made when some of their results were '
                  'known.', '']
    n_all = result['tests'][0]['family_size']
    lines += [
        '| study | hypothesis | alternative | seeds | paired diff. [95 % CI] '
        f'| Holm p within its study | Holm p over all {n_all} pre-registered '
        'tests | confirmed (within its study / over all) | test score_thr |',
        '|---|---|---|---|---|---|---|---|---|']
    for t in result['tests']:
        d = t['diff']
        lines.append(
            f'| [{t["study"]}]({t["study"]}.md) | {t["hypothesis"]}: '
            f'{t["method"]} vs {t["baseline"]} | {t["alternative"]} | '
            f'{" ".join(map(str, d["seeds"]))} | {ci_text(d)} | '
            f'{t["p_holm"]:.4f} | {t["p_family"]:.4f} | '
            f'{"yes" if t["confirmed"] else "no"} / '
            f'{"yes" if t["confirmed_family"] else "no"} | '
            f'{_thresholds(t)} |')
    lines += [
        '', f'**Confirmed in {result["confirmed"]} of {result["n_tests"]} '
        f'pre-registered tests within their studies, in '
        f'{result["confirmed_family"]} over all {n_all}.** '
        f'{pooled_label(result).capitalize()}, over the '
        f'{p["tests"]} tests of the declaration ({p["n"]} pairs): '
        f'{ci_text(p)} AP50; {p["positive"]} of {p["n"]} pairs positive, '
        f'sign test p {p["sign_p"]:.4f}.']
    unequal = [t for t in result['tests'] if ' and ' in _thresholds(t)]
    if unequal:
        lines += ['', f'**At unequal test thresholds** in {len(unequal)} of '
                  f'{result["n_tests"]} tests: each of their differences '
                  'includes the AP50 of the boxes scoring between the two '
                  'thresholds, which only the side tested at the lower one '
                  'keeps; it is not a gain of the loss.']
    if 'amended' in result:
        a = result['amended']
        lines += ['', f'Exploratory, with the tests added by amendment (all '
                  f'{a["tests"]} tests, {a["n"]} pairs): {ci_text(a)} AP50; '
                  f'{a["positive"]} of {a["n"]} pairs positive, sign test p '
                  f'{a["sign_p"]:.4f}.']
    if 'robust' in result:
        w = result['robust']['without_collapsed']
        r = result['robust']['random_effects']
        lines += ['', f'**Bimodal:** {collapsed_text(result)}: a mean over '
                  'them mixes failed runs with results. Exploratory '
                  f'estimates robust to them, all {result["n_tests"]} tests: '
                  f'without the collapsed pairs {ci_text(w)} AP50 ({w["n"]} '
                  f'pairs, {w["positive"]} positive); random-effects pool of '
                  f'the tests without them (DerSimonian-Laird, Hartung-Knapp'
                  f' interval, {r["k"]} tests) {ci_text(r)}, between-test '
                  f'variance {r["tau2"] * 1e4:.1f} points squared.']
    return '\n'.join(lines + [''])


def write_claim(name: str, evidence: str = EVIDENCE) -> dict:
    """Compute the claim and write its ``.md`` and ``.json``."""
    result = pooled_claim(name, evidence)
    with open(osp.join(evidence, f'pooled_{name}.md'), 'w',
              encoding='utf-8') as f:
        f.write(claim_markdown(result))
    slim = dict(result, tests=[
        dict({k: v for k, v in t.items() if k != 'diff'},
             mean=t['diff']['mean'], low=t['diff']['low'],
             high=t['diff']['high'], seeds=t['diff']['seeds'],
             diffs=t['diff']['diffs']) for t in result['tests']])
    _write_record(osp.join(evidence, f'pooled_{name}.json'), slim)
    return result
