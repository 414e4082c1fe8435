"""Pre-registration (``--freeze``): the settings that decide the test runs
and their comparison, frozen with their hash before any test run; the
checks of the test phase and the report against the frozen file."""
import hashlib
import json
import os
import os.path as osp
from typing import Dict, List, Optional, Tuple

from rankloss_lab.runner import write_json
from .common import (METRIC, ROOT, PreregistrationError, _file_sha256, _now,
                     _plain, collect_results, declared_methods, is_coco)
from .fairness import check_fair_selection, grid_step
from .selection import (grid_selection, seed_overlap, selected_lrs,
                        selection_note, selection_seeds)
from .spec import find_spec


def preregistration_paths(spec: dict, out_dir: str) -> Tuple[str, str]:
    """``<out-dir>/<study>_preregistration.json`` and its ``.md``."""
    base = osp.join(out_dir, f"{spec['name']}_preregistration")
    return base + '.json', base + '.md'


def study_settings(spec: dict, chosen: Dict[str, float]) -> dict:
    """What a pre-registration freezes: everything that decides the test
    runs and their comparison (not the labels, notes or descriptions)."""
    methods = {}
    for name in declared_methods(spec):
        m = spec['methods'][name]
        lr = chosen.get(name)
        methods[name] = dict(config=m['config'], options=list(m['options']),
                             lr=None if lr is None else float(lr))
    evaluator = 'CocoMetric' if is_coco(spec) else 'VOCMetric'
    metric = (f'test AP50 ({METRIC}, VOCMetric)' if spec['metric'] == METRIC
              else f"test {spec['metric']} ({evaluator})")
    settings = dict(
        study=spec['name'], metric=metric,
        test_split=spec['test_split'], test_seeds=list(spec['seeds']),
        select_seed=spec['select_seed'], alpha=spec['alpha'],
        data=spec.get('data'), options=list(spec['options']),
        pretrained=spec.get('pretrained'),
        hypotheses=[{k: h[k] for k in ('id', 'method', 'baseline',
                                       'alternative', 'metric')}
                    for h in spec['hypotheses']],
        methods=methods)
    # keys added later, only where set: the studies before them froze
    # without them
    for key in ('test_phase_options', 'extra_metrics'):
        if spec[key]:
            settings[key] = list(spec[key])
    if len(spec['select_seeds']) > 1:
        settings['select_seeds'] = list(spec['select_seeds'])
    if spec.get('fair_selection') is not None:
        settings['fair_selection'] = spec['fair_selection']
    if spec.get('fair_selection') and spec['reselect_seed'] is not None:
        settings['reselect_seed'] = spec['reselect_seed']
    return _plain(settings)


#: Scripts that moved after a study was frozen: a frozen command naming the
#: old path runs the same script (the frozen file itself cannot change).
MOVED_SCRIPTS = {
    'tools/make_digits_voc.py': 'tools/dataset_converters/make_digits_voc.py',
}


def current_paths(settings):
    """``settings`` with every moved script named by its present path."""
    if isinstance(settings, dict):
        return {k: current_paths(v) for k, v in settings.items()}
    if isinstance(settings, list):
        return [current_paths(v) for v in settings]
    return MOVED_SCRIPTS.get(settings, settings)


def settings_hash(settings: dict) -> str:
    text = json.dumps(settings, sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def settings_differences(frozen: dict, current: dict,
                         prefix: str = '') -> List[str]:
    """``'field: frozen A, now B'`` for every field that differs."""
    out = []
    for key in sorted(set(frozen) | set(current)):
        a, b = frozen.get(key, '<absent>'), current.get(key, '<absent>')
        if isinstance(a, dict) and isinstance(b, dict):
            out += settings_differences(a, b, f'{prefix}{key}.')
        elif a != b:
            out.append(f'{prefix}{key}: frozen {a!r}, now {b!r}')
    return out


def read_preregistration(spec: dict, out_dir: str,
                         required: Optional[bool] = None) -> Optional[dict]:
    """The study's frozen pre-registration, or None where there is none
    and it is not ``required`` (default: the spec's ``preregistered``); a
    file whose settings do not match its hash is an error."""
    path = preregistration_paths(spec, out_dir)[0]
    if required is None:
        required = spec['preregistered']
    if not osp.isfile(path):
        if required:
            raise PreregistrationError(
                f"study {spec['name']!r} is pre-registered but {path} does "
                'not exist: run tools/study.py SPEC --freeze before any test '
                'run')
        return None
    with open(path, encoding='utf-8') as f:
        record = json.load(f)
    if settings_hash(record['settings']) != record['settings_sha256']:
        raise PreregistrationError(
            f'{path}: its settings do not match its settings_sha256: the '
            'frozen file was edited after the freeze')
    record['path'] = path
    return record


def check_preregistration(spec: dict, chosen: Dict[str, float],
                          record: dict) -> None:
    """Raises unless the spec's settings and lrs are the frozen ones."""
    diffs = settings_differences(current_paths(record['settings']),
                                 study_settings(spec, chosen))
    if diffs:
        raise PreregistrationError(
            f"the settings of study {spec['name']!r} differ from its "
            f"pre-registration {record['path']} (frozen "
            f"{record['frozen_at']}): " + '; '.join(diffs) + '. Restore '
            'the frozen settings: a changed study is a new study (a new '
            'name and a new freeze).')


def freeze(spec: dict, spec_path: str, work_dir: str, out_dir: str,
           now: Optional[str] = None,
           records: Optional[str] = None) -> Dict[str, str]:
    """Writes the pre-registration (``--freeze``) before any test run:
    hypotheses, test seeds, selected settings, date and settings hash.

    Refuses a ``select_only`` study, a declared method without a selected lr
    or with a test result, a spec that breaks the fair-baseline rules
    (:func:`~rankloss_lab.study.fairness.check_fair_selection`), and another
    freeze with other settings; the same settings again change nothing.
    """
    if spec['select_only']:
        raise PreregistrationError(
            f"cannot freeze {spec['name']!r}: its spec says select_only = "
            'True: it selects on val and is never tested')
    results = collect_results(spec, work_dir, records)
    chosen = selected_lrs(spec, results)
    declared = declared_methods(spec)
    # a collapsed method waiting for its re-selection: the rules say so
    missing = [m for m in declared if m not in chosen and not (
        'lrs' in spec['methods'][m] and
        grid_selection(spec, results, m)['pending'] == 'reselect')]
    if missing:
        raise PreregistrationError(
            f'cannot freeze {spec["name"]!r}: no learning rate selected yet '
            f'for {missing}: run the select phase first (or declare their '
            'lr in the spec)')
    tested = sorted({(m, s) for (m, _, s), r in results.items()
                     if m in declared and s in spec['seeds']
                     and 'test_ap50' in r})
    if tested:
        raise PreregistrationError(
            f'cannot freeze {spec["name"]!r}: test results exist already for '
            f'(method, seed) {tested}: a pre-registration comes before any '
            'test run')
    json_path, md_path = preregistration_paths(spec, out_dir)
    check_fair_selection(spec, results, new=not osp.isfile(json_path))
    settings = study_settings(spec, chosen)
    digest = settings_hash(settings)
    paths = dict(json=json_path, md=md_path)
    if osp.isfile(json_path):
        old = read_preregistration(spec, out_dir, required=True)
        diffs = settings_differences(current_paths(old['settings']),
                                     settings)
        if old['settings_sha256'] == digest or not diffs:
            print(f'[study] {spec["name"]} is frozen already '
                  f'({old["frozen_at"]}, {json_path}); unchanged', flush=True)
            return paths
        raise PreregistrationError(
            f'{json_path} froze other settings on {old["frozen_at"]}: '
            + '; '.join(diffs) +
            '. A study is frozen once; a changed study is a new study (a '
            'new name and a new freeze).')
    rel = osp.relpath(osp.abspath(find_spec(spec_path)), ROOT)
    record = dict(
        study=spec['name'], spec=rel, frozen_at=now or _now(),
        settings_sha256=digest, settings=settings,
        selection={m: dict(lr=chosen[m],
                           how=selection_note(spec, m, results),
                           seeds=selection_seeds(spec, m, results))
                   for m in declared},
        seed_overlap=seed_overlap(spec, declared, results),
        config_sha256={spec['methods'][m]['config']: _file_sha256(
            osp.join(ROOT, spec['methods'][m]['config'])) for m in declared},
        labels={m: spec['methods'][m]['label'] for m in declared})
    os.makedirs(out_dir, exist_ok=True)
    with open(md_path, 'w', encoding='utf-8') as f:
        f.write(preregistration_markdown(spec, record))
    write_json(json_path, record)
    print(f'[study] pre-registration: {json_path}, {md_path}', flush=True)
    return paths


def preregistration_markdown(spec: dict, record: dict) -> str:
    st = record['settings']
    m, alpha = len(st['hypotheses']), st['alpha']
    md = [f"# Pre-registration of study `{record['study']}`", '',
          f"Frozen {record['frozen_at']} by `python tools/study.py "
          f"{record['spec']} --freeze`, before any test run. Settings "
          f"SHA-256 `{record['settings_sha256']}` (the `settings` of the "
          'JSON file beside this one). The test phase refuses to run and the '
          'report refuses to report when the settings differ; test rows of '
          'methods not declared here are labelled exploratory.', '']
    if spec.get('description'):
        md += [spec['description'].strip(), '']
    md += ['## Hypotheses', '',
           f"Metric: {st['metric']} on the `{st['test_split']}` split, per "
           'seed; the statistic is the mean paired difference method - '
           'baseline over the test seeds. ' + (
               f"m = {m} comparison{'s' if m != 1 else ''}, alpha = "
               f'{alpha:g}: paired t-tests, Holm-adjusted p-values; '
               f'Bonferroni intervals at level 1 - {alpha:g}/{m} = '
               f'{1 - alpha / m:.4g} (one-sided for a one-sided '
               'hypothesis).' if m else
               'None: an exploratory study. Its methods, lrs, options and '
               'test seeds are frozen here; every method is compared with '
               'the baseline, two-sided, in the exploratory family.'), '']
    sign = {'greater': '>', 'less': '<', 'two-sided': '!='}
    labels = record.get('labels', {})
    for h in st['hypotheses']:
        md.append(f"- **{h['id']}** ({h['alternative']}): "
                  f"{labels.get(h['method'], h['method'])} (`{h['method']}`)"
                  f" {sign[h['alternative']]} "
                  f"{labels.get(h['baseline'], h['baseline'])} "
                  f"(`{h['baseline']}`), {h['metric']}")
    md += ['', '## Settings', '',
           f"Test seeds: {', '.join(map(str, st['test_seeds']))}. Test split: "
           f"`{st['test_split']}`.", '',
           '| method | config | lr | how the lr was selected | options |',
           '|---|---|---|---|---|']
    for name, ms in st['methods'].items():
        options = ', '.join(f'`{o}`' for o in st['options'] + ms['options'])
        md.append(f"| `{name}` | `{ms['config']}` | {ms['lr']:g} | "
                  f"{record['selection'][name]['how']} | {options or '-'} |")
    if st.get('test_phase_options'):
        md += ['', 'The test runs also train with ' + ', '.join(
            f'`{o}`' for o in st['test_phase_options']) + '.']
    md += ['', 'Config files at the freeze (SHA-256, informational: the '
           'settings freeze each config path, options and lr; an edit of a '
           'config file after the freeze is not refused, so compare these '
           'with the files the runs used):', '']
    md += [f'- `{path}`: `{digest[:16]}`'
           for path, digest in sorted(record['config_sha256'].items())]
    overlap = record['seed_overlap']
    md += ['']
    if st.get('fair_selection') is not None:
        md += [fairness_paragraph(spec, record), '']
    if overlap:
        md.append('**Selection and test seeds overlap:** ' + '; '.join(
            f'`{k}`: seed {", ".join(map(str, v))}' for k, v in
            overlap.items()) + ' selected the lr and is also a test seed.')
    else:
        md.append('Selection and test seeds are disjoint: no test seed took '
                  'part in choosing a learning rate.')
    return '\n'.join(md) + '\n'


def fairness_paragraph(spec: dict, record: dict) -> str:
    """What the freeze checked of the fair-baseline rules, in words."""
    st = record['settings']
    if not st['fair_selection']:
        return ('**Fair-baseline rules waived** (`fair_selection = False`): '
                'the freeze did not check that every declared method was '
                'selected in this study on grids of one density with its best '
                'inside the grid.')
    steps = {grid_step(spec['methods'][m]['lrs']) for m in st['methods']}
    step = f'factor-{steps.pop():g} ' if len(steps) == 1 else ''
    head = ('Fair-baseline rules (`fair_selection = True`), checked at this '
            'freeze: every declared method was selected in this study on '
            f'{step}grids of one density')
    inside = 'its best inside its grid (or the step beyond the edge diverged)'
    if st.get('select_seeds'):
        return (f'{head}, on the best mean val AP50 over seeds '
                f"{', '.join(map(str, st['select_seeds']))}, {inside}.")
    again = sorted(m for m, sel in record['selection'].items()
                   if len(sel['seeds'] or []) > 1)
    return (f"{head} with seed {st['select_seed']}, {inside}"
            + (', and ' + ', '.join(f'`{m}`' for m in again) +
               ' collapsed on that seed and was re-selected on the mean over '
               f"seeds {st['select_seed']} and {st['reselect_seed']}"
               if again else '; no method collapsed') + '.')
