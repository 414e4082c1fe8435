"""Claims tested more than once: every pre-registered test and one pooled
estimate, its method declared before it is computed.

    python tools/analysis_tools/pooled_claim.py --freeze NAME   # declare
    python tools/analysis_tools/pooled_claim.py NAME            # compute

A claim (:data:`CLAIMS`) names the pre-registered hypotheses that tested it
(a study and a hypothesis id of its pre-registration). ``--freeze`` writes
``docs/evidence/pooled_<name>_declaration.json``: the tests, the pooling
method (:data:`METHODS`) and the time, before any pooled number exists; it
refuses when the record exists. A claim pre-registered again later is added
with ``--amend NAME --why TEXT``: the record keeps its tests, method and time
and lists the added tests with the time and the reason; only tests can be
added, never removed, and the method cannot change. The computation refuses
without that record, or when the claim's tests or method differ from the
record's, and writes ``docs/evidence/pooled_<name>.md`` and ``.json``: each test's
outcome (confirmed: Holm-adjusted p <= alpha in the declared direction, as
its study's report) and the pooled estimate over every pre-registered test
seed. The numbers come from the studies' own CSVs (``docs/evidence/<study>
.csv`` and ``<study>_comparisons.csv``).
"""
import datetime
import json
import math
import os.path as osp
from typing import Dict, List, Optional

from . import stats
from .results import read_csv, test_values

__all__ = ['CLAIMS', 'METHODS', 'ClaimError', 'freeze_claim', 'amend_claim',
           'read_claim_record', 'pooled_claim', 'claim_markdown',
           'test_outcomes']

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
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
        method='seed_pooled_t'),
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
    record = dict(
        claim=name, statement=claim['claim'], tests=claim['tests'],
        method=claim['method'], method_text=METHODS[claim['method']],
        frozen_at=_now(now))
    _write_record(path, record)
    return path


def _write_record(path: str, record: dict) -> None:
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write('\n')


def _now(now: Optional[str]) -> str:
    return now or datetime.datetime.now(
        datetime.timezone.utc).isoformat(timespec='seconds')


def amend_claim(name: str, why: str, evidence: str = EVIDENCE,
                now: Optional[str] = None) -> str:
    """Add the claim's tests that its record lacks (a later pre-registered
    test of the same claim), with the time and ``why``. Refuses when the
    record lacks nothing, when a recorded test is no longer in the claim
    (tests are never removed) or when the method differs."""
    claim = _claim(name)
    path = _record_path(name, evidence)
    if not osp.isfile(path):
        raise ClaimError(f'{path} does not exist: declare it first '
                         f'(--freeze {name})')
    if not why.strip():
        raise ClaimError('an amendment says why (--why)')
    with open(path, encoding='utf-8') as f:
        record = json.load(f)
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
    path = _record_path(name, evidence)
    if not osp.isfile(path):
        raise ClaimError(f'{path} does not exist: declare the pooling '
                         f'method first (--freeze {name})')
    with open(path, encoding='utf-8') as f:
        record = json.load(f)
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


def _test_values(study: str, method: str, evidence: str) -> Dict[int, float]:
    return test_values(read_csv(osp.join(evidence, f'{study}.csv')), method)


def test_outcomes(tests: List[dict], evidence: str = EVIDENCE,
                  alpha: float = 0.05) -> List[dict]:
    """Per test: its study, hypothesis, method, baseline, alternative, the
    paired differences per seed, the interval, the Holm p and whether it
    confirmed the claim."""
    out = []
    for test in tests:
        row = _hypothesis_row(test['study'], test['hypothesis'], evidence)
        method = _test_values(test['study'], row['method'], evidence)
        base = _test_values(test['study'], row['baseline'], evidence)
        seeds = [int(s) for s in row['seeds'].split()]
        diff = stats.paired_difference({s: method[s] for s in seeds},
                                       {s: base[s] for s in seeds})
        p_holm = float(row['p_holm'])
        direction = {'greater': 1, 'less': -1}.get(row['alternative'], 0)
        sign = math.copysign(1, diff['mean'])
        confirmed = p_holm <= alpha and (direction == 0 or
                                         direction == sign)
        out.append(dict(test, method=row['method'], baseline=row['baseline'],
                        alternative=row['alternative'], diff=diff,
                        p_holm=p_holm, confirmed=confirmed))
    return out


def _sign_test(diffs: List[float]) -> float:
    """Exact two-sided sign-test p-value (zero differences dropped)."""
    pos = sum(d > 0 for d in diffs)
    n = sum(d != 0 for d in diffs)
    if n == 0:
        return 1.0
    k = min(pos, n - pos)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail)


def pooled_claim(name: str, evidence: str = EVIDENCE) -> dict:
    """The claim's outcome: ``k`` of ``n`` pre-registered tests confirmed
    and the declared pooled estimate. Refuses without its record."""
    record = read_claim_record(name, evidence)
    tests = test_outcomes(record['tests'], evidence)
    diffs = [d for t in tests for d in t['diff']['diffs']]
    mean, std = stats.mean_std(diffs)
    se = std / math.sqrt(len(diffs))
    half = stats.t_quantile(len(diffs) - 1) * se
    return dict(
        claim=name, statement=record['statement'],
        frozen_at=record['frozen_at'], method=record['method'],
        method_text=record['method_text'], tests=tests,
        amendments=record.get('amendments', []),
        confirmed=sum(t['confirmed'] for t in tests), n_tests=len(tests),
        pooled=dict(n=len(diffs), mean=mean, low=mean - half,
                    high=mean + half, positive=sum(d > 0 for d in diffs),
                    sign_p=_sign_test(diffs)))


def _pct(value: float) -> str:
    return f'{100 * value:+.1f}'


def claim_markdown(result: dict) -> str:
    """The claim's report."""
    p = result['pooled']
    lines = [
        f'# Pooled claim `{result["claim"]}`', '',
        f'Claim: {result["statement"]}.', '',
        f'Method declared in `pooled_{result["claim"]}_declaration.json`'
        f', frozen {result["frozen_at"]}, before this estimate was computed:'
        f' {result["method_text"]}', '',
    ]
    for a in result.get('amendments', []):
        added = ', '.join(f'{t["study"]} {t["hypothesis"]}'
                          for t in a['added'])
        lines += [f'Amended {a["at"]}: added {added}. {a["why"]}', '']
    lines += [
        '| study | hypothesis | alternative | seeds | paired diff. [95 % CI] '
        '| Holm p | confirmed |', '|---|---|---|---|---|---|---|'
    ]
    for t in result['tests']:
        d = t['diff']
        lines.append(
            f'| [{t["study"]}]({t["study"]}.md) | {t["hypothesis"]}: '
            f'{t["method"]} vs {t["baseline"]} | {t["alternative"]} | '
            f'{" ".join(map(str, d["seeds"]))} | {_pct(d["mean"])} '
            f'[{_pct(d["low"])}, {_pct(d["high"])}] | {t["p_holm"]:.4f} | '
            f'{"yes" if t["confirmed"] else "no"} |')
    lines += [
        '',
        f'**Confirmed in {result["confirmed"]} of {result["n_tests"]} '
        f'pre-registered tests.** Pooled over all {p["n"]} pre-registered '
        f'test seeds: {_pct(p["mean"])} AP50 [{_pct(p["low"])}, '
        f'{_pct(p["high"])}]; {p["positive"]} of {p["n"]} seeds positive, '
        f'sign test p {p["sign_p"]:.4f}.', ''
    ]
    return '\n'.join(lines)


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
    with open(osp.join(evidence, f'pooled_{name}.json'), 'w',
              encoding='utf-8') as f:
        json.dump(slim, f, indent=1, sort_keys=True)
        f.write('\n')
    return result
