"""The comparisons of a study: the pre-registered family and the
exploratory one, each corrected for multiplicity (Bonferroni intervals,
Holm-adjusted p-values), as markdown and as ``<study>_comparisons.csv``."""
import csv
from typing import Dict, List, Optional

from rankloss_lab.stats import (COLLAPSE_BELOW, COLLAPSE_FRACTION,
                                bimodal_texts, corrected_family, interval_text,
                                paired_difference, signed_rank_test)
from .common import (hypothesis_methods, hypothesis_metric, hypothesis_text,
                     metric_label, study_metrics)
from .selection import seed_overlap


def study_comparisons(spec: dict, per_method: Dict[str, Dict[int, float]],
                      record: Optional[dict],
                      per_metric: Optional[Dict[str, Dict]] = None
                      ) -> List[dict]:
    """The study's comparisons with raw and corrected statistics: a frozen
    study's hypotheses as one family (measured or not), the other methods
    against the baseline (and ``exploratory_comparisons``) on each metric
    as an exploratory one; ``per_method`` (``{method: {seed: value}}``) is
    of the spec's metric, ``per_metric`` ``{metric: per_method}``.
    """
    per_metric = per_metric or {spec['metric']: per_method}

    def pair(method, baseline, key):
        values = per_metric.get(key, {})
        return paired_difference(values.get(method, {}),
                                 values.get(baseline, {}))

    out, done = [], set()
    if record is not None:
        family = []
        for h in record['settings']['hypotheses']:
            key = hypothesis_metric(h)
            family.append(dict(h, family='pre-registered', metric_key=key,
                               diff=pair(h['method'], h['baseline'], key)))
            done.add((h['method'], h['baseline'], key))
        out += corrected_family(family, spec['alpha'])
    family = []
    declared = hypothesis_methods(spec) if record is not None else []
    pairs = [(mname, spec['baseline']) for mname in per_method
             if mname != spec['baseline'] and mname not in declared]
    pairs += [(c['method'], c['baseline'])
              for c in spec.get('exploratory_comparisons', [])]
    for metric in study_metrics(spec):
        for method, baseline in pairs:
            if (method, baseline, metric) in done:
                continue
            done.add((method, baseline, metric))
            diff = pair(method, baseline, metric)
            if diff is not None:
                family.append(dict(
                    id='-', method=method, baseline=baseline,
                    alternative='two-sided', family='exploratory',
                    metric=hypothesis_text(metric), metric_key=metric,
                    diff=diff))
    if family:
        out += corrected_family(family, spec['alpha'])
    for c in out:
        c['bimodal'] = bimodal_sides(c, per_metric[c['metric_key']]
                                     if c['metric_key'] in per_metric
                                     else {})
    return out


def bimodal_sides(c: dict, per_method: Dict[str, Dict[int, float]]
                  ) -> Dict[str, str]:
    """``{method: 'k of n seeds trained'}`` of a comparison's bimodal sides."""
    if c.get('diff') is None:
        return {}
    return bimodal_texts({
        name: [per_method[name][s] for s in c['diff']['seeds']]
        for name in (c['method'], c['baseline'])})


def comparisons_markdown(spec: dict, comparisons: List[dict]) -> List[str]:
    if not comparisons:
        return []
    alpha = spec['alpha']
    md = ['## Comparisons, corrected for multiplicity', '',
          'Each comparison is the paired difference method - baseline over '
          'the test seeds both have. Beside the raw two-sided 95 % t '
          f'interval: the Bonferroni interval at level 1 - {alpha:g}/m (m: '
          'the comparisons of its family; one-sided for a one-sided '
          'hypothesis), the paired t-test p-value and the Holm-adjusted '
          f'p-value; "yes" when the Holm-adjusted p is at most {alpha:g}.',
          '']
    for family in ('pre-registered', 'exploratory'):
        members = [c for c in comparisons if c['family'] == family]
        if not members:
            continue
        md.append(f"Pre-registered family: m = {members[0]['m']} hypotheses, "
                  'frozen before the test runs.' if family == 'pre-registered'
                  else f"Exploratory family: m = {members[0]['m']} "
                  'comparisons, not pre-registered (no confirmatory claim).')
        md += ['', '| comparison | alternative | seeds | diff. | raw 95 % CI '
               '| Bonferroni CI | p (paired t) | Holm p | significant after '
               'Holm |', '|---|---|---|---|---|---|---|---|---|']
        labels = spec['methods']
        for c in members:
            name = (f"{c['id']}: " if c['id'] != '-' else '') + (
                f"{labels[c['method']]['label']} vs "
                f"{labels[c['baseline']]['label']}")
            if spec['extra_metrics']:
                name += f", {metric_label(c['metric_key'])}"
            if c.get('bimodal'):
                name += ' (bimodal: ' + '; '.join(
                    f"{labels[k]['label']}: {v}"
                    for k, v in c['bimodal'].items()) + (
                    '; exact signed-rank p ' + format(signed_rank_test(
                        c['diff']['diffs'], c['alternative']), '.4f') + ')')
            if 'p' not in c:
                md.append(f"| {name} | {c['alternative']} | - | not measured "
                          '| - | - | - | - | - |')
                continue
            d = c['diff']
            md.append(
                f"| {name} | {c['alternative']} | {d['n']} | "
                f"{100 * d['mean']:+.1f} | [{100 * c['low']:+.1f}, "
                f"{100 * c['high']:+.1f}] | {interval_text(c)} | "
                f"{c['p']:.4f} | {c['p_holm']:.4f} | "
                f"{'yes' if c['significant'] else 'no'} |")
        md.append('')
    if any(c.get('bimodal') for c in comparisons):
        md += ['**Bimodal** (marked above): some seeds of a side trained and '
               'some collapsed (test value below '
               f'{COLLAPSE_FRACTION:g} times the larger median of the two '
               f'sides, or below {100 * COLLAPSE_BELOW:g} %): its mean, the t '
               'intervals and the t-test mix two outcomes and describe '
               'neither; read them with how many seeds trained and the '
               'exact signed-rank p (per seed).', '']
    return md[:-1]


def write_comparisons_csv(spec: dict, comparisons: List[dict],
                          path: str) -> None:
    """``<study>_comparisons.csv``: one row per comparison."""
    overlap = seed_overlap(spec, list(spec['methods']))
    metric = ['metric'] if spec['extra_metrics'] else []
    with open(path, 'w', newline='', encoding='utf-8') as f:
        writer = csv.writer(f)
        writer.writerow(
            ['study', 'family', 'id', 'method', 'baseline'] + metric +
            ['alternative', 'n', 'seeds', 'mean_diff', 'ci95_low',
             'ci95_high', 'm', 'bonferroni_level', 'bonferroni_low',
             'bonferroni_high', 'p', 'p_holm', 'significant_holm',
             'selection_test_seed_overlap'])
        for c in comparisons:
            d = c.get('diff')
            both = sorted(set(overlap.get(c['method'], [])) |
                          set(overlap.get(c['baseline'], [])))
            writer.writerow(
                [spec['name'], c['family'], c['id'], c['method'],
                 c['baseline']] + [c['metric_key'] for _ in metric] +
                [c['alternative']] + (
                     ['', '', '', '', ''] if d is None else
                     [d['n'], ' '.join(map(str, d['seeds'])),
                      f"{d['mean']:.6f}", f"{c['low']:.6f}",
                      f"{c['high']:.6f}"]) +
                [c['m'], f"{c['bonf_level']:.6g}"] + (
                    ['', '', '', '', ''] if d is None else
                    [f"{c['bonf_low']:.6f}", f"{c['bonf_high']:.6f}",
                     f"{c['p']:.6g}", f"{c['p_holm']:.6g}",
                     c['significant']]) +
                [' '.join(map(str, both))])
