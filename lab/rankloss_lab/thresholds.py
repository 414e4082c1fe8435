"""The score threshold each study tested each method at.

MMDetection drops boxes below ``test_cfg.score_thr`` before AP50, so a
method tested at 0 keeps boxes a baseline at 0.05 drops. New records carry
it (``test_score_thr``); for earlier studies
``docs/evidence/test_score_thresholds.json`` holds it, resolved from
today's configs and corrected by :data:`CHANGES` (``python -m
rankloss_lab.thresholds --write``).
"""
import argparse
import glob
import json
import os.path as osp
from typing import Dict, Optional, Tuple

from rankloss_lab.paths import ROOT
from rankloss_lab.results import frozen_settings
from rankloss_lab.runner import read_json

EVIDENCE = osp.join(ROOT, 'docs', 'evidence')
PATH = osp.join(EVIDENCE, 'test_score_thresholds.json')

#: Configs whose test threshold changed after some studies were tested:
#: (config path prefix, the threshold before, ISO time of the change, why).
CHANGES = [
    ('configs/digitsvoc/faster-rcnn_r18-w32', 'rambo-bce', 0.0,
     '2026-11-27T10:10:03+00:00',
     'the mix configs took their cross-entropy twin\'s 0.05 then'),
]


def resolve(spec: dict, method: str) -> Optional[float]:
    """The test score threshold of ``method`` in ``spec`` with today's
    config and options (None: a model without one, e.g. retrieval)."""
    from rankloss_lab.study.common import run_config
    m = spec['methods'][method]
    cfg = run_config(m['config'], list(spec.get('options', [])) +
                     list(m.get('options', [])))
    test_cfg = cfg.model.get('test_cfg') or {}
    thr = test_cfg.get('rcnn', test_cfg).get('score_thr')
    return None if thr is None else float(thr)


def _tested_at(study: str) -> Optional[str]:
    """The earliest test time of a study's records, if they carry one."""
    times = (read_json(path).get('test_started_at') for path in
             glob.glob(osp.join(EVIDENCE, 'runs', study, '*.json')))
    return min((t for t in times if t), default=None)


def config_change(config: str) -> Optional[tuple]:
    """The entry of :data:`CHANGES` that names ``config``, or None."""
    for change in CHANGES:
        prefix, tag = change[:2]
        if config.startswith(prefix) and f'_{tag}_' in config:
            return change
    return None


def _before_change(spec: dict, method: str, tested: Optional[str],
                   thr: float) -> float:
    change = config_change(spec['methods'][method]['config'])
    if change and (tested is None or tested < change[3]) and not any(
            'score_thr' in o for o in spec.get('options', []) +
            spec['methods'][method].get('options', [])):
        return change[2]
    return thr


def collect() -> dict:
    """Resolves every study with test results; a study whose records carry
    no test time was tested before the first change of :data:`CHANGES`."""
    from rankloss_lab.study.spec import load_spec
    out = {}
    for spec_path in sorted(glob.glob(osp.join(ROOT, 'lab', 'rankloss_lab',
                                               'studies', '*.py'))):
        name = osp.splitext(osp.basename(spec_path))[0]
        if not osp.isfile(osp.join(EVIDENCE, f'{name}.csv')):
            continue
        spec = load_spec(spec_path)
        if spec.get('select_only'):  # trained and scored on val only
            continue
        tested = _tested_at(name)
        row = {}
        for method in spec['methods']:
            thr = resolve(spec, method)
            if thr is not None:
                row[method] = _before_change(spec, method, tested, thr)
        out[name] = row
    return out


def write() -> dict:
    """Writes :func:`collect` to :data:`PATH`."""
    out = collect()
    with open(PATH, 'w', encoding='utf-8') as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write('\n')
    return out


def test_thresholds(study: str, evidence: str = EVIDENCE) -> Dict[str, float]:
    """``{method: test score_thr}`` of a study: from :data:`PATH`, else
    from its run records (empty: not recorded)."""
    path = osp.join(evidence, osp.basename(PATH))
    known = read_json(path) or {}
    if study in known:
        return known[study]
    out = {}
    for path in glob.glob(osp.join(evidence, 'runs', study, '*.json')):
        res = read_json(path)
        if res.get('test_score_thr') is not None:
            out[res['method']] = float(res['test_score_thr'])
    return out


def thresholds_text(study: str, *methods: str,
                    labels: Optional[Dict[str, str]] = None) -> str:
    """``'tested at score_thr 0'`` when ``methods`` share a threshold,
    ``'tested at score_thr 0 (a) and 0.05 (b)'`` when they do not, ``''``
    when the study records none."""
    thr = test_thresholds(study)
    values = [thr.get(m) for m in methods]
    if any(v is None for v in values):
        return ''
    if len(set(values)) == 1:
        return f'tested at score_thr {values[0]:g}'
    labels = labels or {}
    parts = [f'{v:g} ({labels.get(m, m)})' for m, v in zip(methods, values)]
    return 'tested at score_thr ' + ' and '.join(parts)


def _compared(study: str, evidence: str):
    """The (method, baseline) pairs a study report compares: the rows of
    its ``_comparisons.csv``, else every method against the baseline."""
    from rankloss_lab.results import read_csv
    path = osp.join(evidence, f'{study}_comparisons.csv')
    if osp.isfile(path):
        return [(r['method'], r['baseline']) for r in read_csv(path)]
    spec_path = osp.join(ROOT, 'lab', 'rankloss_lab', 'studies', f'{study}.py')
    if not osp.isfile(spec_path):
        return []
    from rankloss_lab.study.spec import load_spec
    spec = load_spec(spec_path)
    return [(m, spec['baseline']) for m in spec['methods']
            if m != spec['baseline']]


def report_block(study: str, evidence: str = EVIDENCE) -> str:
    """A study report's paragraph on its test thresholds: each method's,
    and the comparisons across thresholds ('' for a study without any)."""
    thr = test_thresholds(study, evidence)
    if not thr:
        return ''
    by = {}
    for method, v in thr.items():
        by.setdefault(v, []).append(f'`{method}`')
    lines = ['**Test score thresholds** (MMDetection drops the boxes scoring '
             'below `score_thr` before AP50 is computed): ' + '; '.join(
                 f'{v:g} for {", ".join(ms)}' for v, ms in sorted(
                     by.items())) + '.']
    mixed = []
    for method, base in _compared(study, evidence):
        a, b = thr.get(method), thr.get(base)
        if None in (a, b) or a == b:
            continue
        pair = f'`{method}` vs `{base}` ({a:g} vs {b:g})'
        if pair not in mixed:
            mixed.append(pair)
    if mixed:
        lines.append(
            'Compared across thresholds: ' + ', '.join(mixed) + '. Such a '
            'difference includes the AP50 of the boxes scoring between the '
            'two thresholds, which only the side tested at the lower one '
            'keeps. The test detections of these runs were not kept, so '
            'they cannot be re-scored at one threshold.')
    return ' '.join(lines) + '\n'


#: The last epochs whose val AP50 gain :func:`budget_text` reports, and the
#: gain (a fraction) above which a method was still learning at the end.
LAST_EPOCHS = 3
STILL_RISING = 0.01


def budget_gains(study: str, evidence: str = EVIDENCE) -> Dict[str, float]:
    """``{method: mean val AP50 gain over the last LAST_EPOCHS epochs}``."""
    return budget_runs(study, evidence)[0]


def test_schedule(study: str, evidence: str = EVIDENCE) -> list:
    """The frozen ``test_phase_options`` that give the test runs a schedule
    of their own (any but ``train_cfg.val_interval``): empty where they
    train as the selection runs did."""
    settings = frozen_settings(study, evidence) or {}
    return [o for o in settings.get('test_phase_options', [])
            if not o.startswith('train_cfg.val_interval')]


def budget_runs(study: str, evidence: str = EVIDENCE
                ) -> Tuple[Dict[str, float], str]:
    """``(gains, whose)``: :func:`budget_gains` from the study CSV's
    per-epoch val curves of the test runs at each method's selected lr
    (``'test seeds'``), or, where those have none and the test runs train
    on the selection's schedule (:func:`test_schedule`), of the selection
    runs (``'selection seeds'``)."""
    from rankloss_lab.results import read_csv
    path = osp.join(evidence, f'{study}.csv')
    if not osp.isfile(path):
        return {}, 'test seeds'
    rows = [r for r in read_csv(path) if r.get('selected_lr') == 'True']
    sources = [('test seeds', True)] + (
        [] if test_schedule(study, evidence) else
        [('selection seeds', False)])
    for whose, tested in sources:
        gains: Dict[str, list] = {}
        for row in rows:
            if bool(row.get('test_ap50')) != tested:
                continue
            curve = [float(v) for k, v in row.items()
                     if k.startswith('val_ap50_epoch') and v]
            if len(curve) > LAST_EPOCHS:
                gains.setdefault(row['method'], []).append(
                    curve[-1] - curve[-1 - LAST_EPOCHS])
        if gains:
            return {m: sum(g) / len(g) for m, g in gains.items()}, whose
    return {}, 'test seeds'


def budget_text(study: str, evidence: str = EVIDENCE) -> str:
    """Whether a study's methods were still learning at the end, in words."""
    gains, whose = budget_runs(study, evidence)
    if not gains:
        own = test_schedule(study, evidence)
        return '' if not own else (
            '**Budget.** The test runs train on a schedule of their own, '
            'frozen before them (' + ', '.join(f'`{o}`' for o in own) +
            '), and validate after their last epoch only: the selection '
            "runs' val curves are of another schedule.\n")
    rising = [m for m, g in gains.items() if g > STILL_RISING]
    listed = ', '.join(f'`{m}` {100 * g:+.1f}' for m, g in gains.items())
    text = (f'**Budget.** Mean val AP50 gain over the last {LAST_EPOCHS} '
            f'epochs ({whose}, selected lr): {listed} points.')
    if rising:
        text += (f' {len(rising)} of {len(gains)} methods were still '
                 f'learning at the end (a gain above {100 * STILL_RISING:g} '
                 'point): at this budget the comparison measures how fast '
                 'each loss learns, not the accuracy it converges to.')
    return text + '\n'


def conditions_block(study: str, evidence: str = EVIDENCE) -> str:
    """The report paragraphs on the test conditions: thresholds and budget."""
    parts = [t for t in (report_block(study, evidence),
                         budget_text(study, evidence)) if t]
    return '\n'.join(parts) if parts else 'No test run: no test thresholds.\n'


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--write', action='store_true', required=True)
    parser.parse_args()
    print(json.dumps(write(), indent=1))
