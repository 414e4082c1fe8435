"""The report of a study: ``<study>.csv`` (one row per run), ``<study>.md``
(the selection grids, the test table, the comparisons, the scores users
threshold on) and the curves; refused where the pre-registration forbids."""
import csv
import math
import os
import os.path as osp
from datetime import datetime
from typing import Dict, List, Optional, Sequence, Tuple

from rankloss_lab.stats import (COLLAPSE_BELOW, bimodal, ci_text,
                                collapse_floor, interval_text, mean_std,
                                mean_std_text, paired_difference, trained_text)
from rankloss_lab.thresholds import conditions_block
from .common import (THRESHOLDS, PreregistrationError, _fmt, _pct,
                     declared_methods, is_coco, metric_label, study_metrics,
                     val_by_epoch)
from .comparisons import (comparisons_markdown, study_comparisons,
                          write_comparisons_csv)
from .curves import plot_curves
from .freeze import check_preregistration, read_preregistration
from .selection import (grid_selection, run_score, seed_overlap, selected_lrs,
                        selection_phrase, selection_seeds)


def write_report(spec: dict, results: Dict[Tuple, dict],
                 out_dir: str) -> Dict[str, str]:
    os.makedirs(out_dir, exist_ok=True)
    name = spec['name']
    paths = dict(csv=osp.join(out_dir, f'{name}.csv'),
                 md=osp.join(out_dir, f'{name}.md'),
                 png=osp.join(out_dir, f'{name}_curves.png'))
    chosen = selected_lrs(spec, results)
    per_metric = test_values(spec, results, chosen)
    per_method = per_metric[spec['metric']]
    record = read_preregistration(spec, out_dir, required=False)
    check_reportable(spec, results, chosen, per_method, record)
    declared = declared_methods(spec) if record else list(spec['methods'])
    exploratory = [m for m in spec['methods'] if m not in declared]
    comparisons = study_comparisons(spec, per_method, record, per_metric)
    rows = sorted(results.values(),
                  key=lambda r: (list(spec['methods']).index(r['method']),
                                 r['lr'], r['seed']))
    curves = [val_by_epoch(r) for r in rows]
    epochs = sorted(set().union(*curves)) if curves else []
    extra = spec['extra_metrics']
    with open(paths['csv'], 'w', newline='', encoding='utf-8') as f:
        writer = csv.writer(f)
        writer.writerow(
            ['study', 'method', 'lr', 'seed', 'selected_lr', 'val_ap50',
             'test_ap50'] + [f'{split}_{key}' for key in extra
                             for split in ('val', 'test')] +
            ['train_seconds', 'ece', 'ece_platt'] +
            [f'val_ap50_epoch{e}' for e in epochs])
        for r, curve in zip(rows, curves):
            cal = r.get('calibration', {})
            writer.writerow(
                [name, r['method'], r['lr'], r['seed'],
                 chosen.get(r['method']) == r['lr'],
                 _fmt(r.get('val_ap50'), 4), _fmt(r.get('test_ap50'), 4)] +
                [_fmt(r.get(f'{split}_metrics', {}).get(key), 4)
                 for key in extra for split in ('val', 'test')] +
                [_fmt(r.get('train_seconds'), 1), _fmt(cal.get('ece'), 4),
                 _fmt(cal.get('ece_platt'), 4)] +
                [_fmt(curve.get(e), 4) for e in epochs])
    md = [f'# Study `{name}`', '']
    if spec.get('description'):
        md += [spec['description'].strip(), '']
    conditions_at = len(md)
    machines = sorted({r.get('machine', '?') for r in rows})
    split = spec['test_split']
    md += [f'Machine: {"; ".join(machines) or "-"}. ' + metric_sentence(spec)
           + ' Test seeds: ' + (', '.join(map(
               str, spec['seeds'])) or 'none (selection only)') +
           (f'; test split `{split}`' if split != 'test' else '') +
           '; learning rates selected on val with ' +
           selection_phrase(spec) + (
               ' (methods with a grid)' if any(
                   'lr' in m for m in spec['methods'].values()) else '') +
           '.', '', seeds_sentence(spec, [m for m in per_method
                                          if per_method[m]] or list(chosen)),
           '']
    if record is not None or any(per_method.values()):
        md += [preregistration_sentence(spec, record), '']
    md += [f'## Learning rate selection (val {metric_label(spec["metric"])} '
           'after the last epoch)', '']
    md += selection_lines(spec, results, chosen)
    for mname, m in spec['methods'].items():
        if 'lr' not in m:  # an lr chosen before this study: say where
            continue
        on = m.get('selected_on') or {}
        where = (f" in `{on['study']}`" if on.get('study') else '') + (
            f" with seed{'s' if len(on.get('seeds', [])) > 1 else ''} "
            f"{', '.join(map(str, on['seeds']))}" if on.get('seeds') else '')
        note = f"; {on['note']}" if on.get('note') else ''
        md.append(f'- {m["label"]} (`{mname}`): lr {m["lr"]:g}, selected on '
                  f'val before this study{where}{note}')
    # each row against its hypothesis' baseline (frozen), else the spec's
    hyps = record['settings']['hypotheses'] if record else []
    row_base = {h['method']: h['baseline'] for h in reversed(hyps)}
    tables = [(key, _test_table(spec, results, chosen, per_metric[key],
                                comparisons, key, row_base, exploratory))
              for key in study_metrics(spec)]
    for key, table in tables:
        title = ('Test AP50' if not extra else
                 f'Test {metric_label(key)} (`{key}`)')
        md += ['', f'## {title} at the selected learning rate', ''] + table
    if any(table for _, table in tables):
        md += [''] + comparisons_markdown(spec, comparisons)
        paths['comparisons'] = osp.join(out_dir, f'{name}_comparisons.csv')
        write_comparisons_csv(spec, comparisons, paths['comparisons'])
    else:  # a selection-only study, or its test phase not run yet
        md.append('No test run (`--phase test`): this report holds the '
                  'learning-rate selection only.')
    if is_coco(spec) and any(per_method.values()):
        md += ['', 'No calibration (D-ECE, precision / recall at score '
               'thresholds): a CocoMetric study evaluates test only, and '
               'the fit needs its own val detections.']
    md += _lrp_lines(spec, results, chosen, per_method)
    cal_rows = []
    for mname, seeds in per_method.items():
        cals = [c for c in (results[(mname, chosen[mname], s)].get(
            'calibration', {}) for s in seeds) if 'ece' in c]
        if not cals:
            continue

        def avg(get):
            vals = [v for v in map(get, cals) if v == v]  # drop NaN
            return sum(vals) / len(vals) if vals else float('nan')

        cells = [f'{avg(lambda c: c[k]):.3f}' for k in ('ece', 'ece_platt')]
        for t in THRESHOLDS:
            for key in ('at', 'at_platt'):
                p, r = (avg(lambda c: c[key][str(t)][k])
                        for k in ('precision', 'recall'))
                cells.append(f'{_pct(p)} / {_pct(r)}')
        cal_rows.append(f'| {spec["methods"][mname]["label"]} | ' +
                        ' | '.join(cells) + ' |')
    if cal_rows:
        head = ['D-ECE', 'D-ECE, Platt']
        for t in THRESHOLDS:
            head += [f'P / R at {t:g}', f'P / R at {t:g}, Platt']
        md += ['', '## Scores users threshold on (test, mean over seeds)',
               '', 'Precision / recall (%) of the detections scoring at '
               'least t, and the detection expected calibration error (10 '
               'bins), as trained and after a monotone Platt fit on val '
               '(AP unchanged).', '',
               '| method | ' + ' | '.join(head) + ' |',
               '|---|' + '---|' * len(head)] + cal_rows
    whose = plot_curves(spec, results, chosen, paths['png'], exploratory)
    if whose:
        md += ['', f'![val AP50 per epoch]({osp.basename(paths["png"])})']
        if whose != 'test seeds' and not spec.get('select_only'):
            md += ['', f'*Val AP50 per epoch of the {whose} at the selected '
                   'learning rates: the test runs validated after their '
                   'last epoch alone (`test_phase_options`).*']
    # thresholds and budget, from the CSVs just written
    md[conditions_at:conditions_at] = [
        f'<!-- evidence-table: conditions-{name} -->',
        conditions_block(name, out_dir).rstrip('\n'),
        '<!-- /evidence-table -->', '']
    with open(paths['md'], 'w', encoding='utf-8') as f:
        f.write('\n'.join(md) + '\n')
    return paths


def test_values(spec: dict, results: Dict[Tuple, dict],
                chosen: Dict[str, float]
                ) -> Dict[str, Dict[str, Dict[int, float]]]:
    """``{metric: {method: {seed: test value}}}`` at each method's selected
    lr, over the spec's metrics and the test seeds each method has."""
    out = {}
    for key in study_metrics(spec):
        out[key] = {}
        for mname in spec['methods']:
            if mname not in chosen:
                continue
            runs = {s: results.get((mname, chosen[mname], s), {})
                    for s in spec['seeds']}
            out[key][mname] = {
                s: r['test_ap50'] if key == spec['metric'] else
                r['test_metrics'][key] for s, r in runs.items()
                if 'test_ap50' in r}
    return out


def metric_sentence(spec: dict) -> str:
    """The metrics of the report, in words."""
    if not is_coco(spec):
        return 'AP50 in %, VOCMetric (11 points).'
    return ('In %, CocoMetric (101-point AP): ' + ', '.join(
        f'{metric_label(k)} `{k}`' for k in study_metrics(spec)) +
        f"; learning rates selected on val {metric_label(spec['metric'])}.")


def _test_table(spec: dict, results: Dict[Tuple, dict],
                chosen: Dict[str, float], per_method: Dict[str, Dict],
                comparisons: List[dict], key: str, row_base: Dict[str, str],
                exploratory: List[str]) -> List[str]:
    """The test table of one metric (``key``): mean ± std, per seed, the
    paired difference to the row's baseline; no lines before any test run."""
    table = []
    by_pair = {(c['method'], c['baseline']): c for c in comparisons
               if c.get('metric_key', spec['metric']) == key}
    baselines = {spec['baseline']} | set(row_base.values())
    label = metric_label(key) if spec['extra_metrics'] else 'AP50'
    for mname, values in per_method.items():
        if not values:
            continue
        vals = list(values.values())
        mean, std = mean_std(vals)
        bname = row_base.get(mname, spec['baseline'])
        diff = paired_difference(values, per_method.get(bname, {}))
        diff_text = '-' if (mname in baselines and mname not in row_base
                            ) or diff is None else ci_text(diff)
        comp = by_pair.get((mname, bname), {})
        bonf_text = interval_text(comp) if 'p' in comp else '-'
        runs = [results[(mname, chosen[mname], s)] for s in values]
        # a run resumed after an attempt of unknown length: time unknown
        times = [r['train_seconds'] for r in runs
                 if not r.get('train_seconds_partial')] or [float('nan')]
        name = spec['methods'][mname]['label'] + (
            ' *(exploratory)*' if mname in exploratory else '')
        spread = f'{100 * mean:.1f} ± {_pct(std)}'
        floor = collapse_floor(*(
            [vals, list(per_method.get(bname, {}).values())]
            if mname not in baselines or mname in row_base else
            [list(v.values()) for v in per_method.values() if v]))
        if bimodal(vals, floor):  # some trained, some not
            spread += f' ({trained_text(vals, floor)})'
        table.append(
            f'| {name} | {chosen[mname]:g} | {len(values)} | {spread} | '
            + ', '.join(f'{100 * values[s]:.1f}' for s in sorted(values)) +
            f' | {diff_text} | {bonf_text} | {mean_std(times)[0]:.0f} |')
    if not table:
        return []
    return ([f'| method | lr | seeds | test {label} mean ± std | per seed | '
             + ('paired diff. to its hypothesis\' baseline'
                if len(baselines) > 1 else
                f'paired diff. to {spec["baseline"]}') + ' [95 % CI] | '
             'Bonferroni CI (see below) | train time (s) |',
             '|---|---|---|---|---|---|---|---|'] + table)


def _val_text(res: Optional[dict]) -> str:
    """A selection run's val AP50 in the grid line."""
    if res is None:
        return '-'
    if res.get('val_ap50') is None:
        return 'diverged'
    text = f'{100 * res["val_ap50"]:.1f}'
    return text + ' (diverged)' if res.get('diverged') else text


def selection_lines(spec: dict, results: Dict[Tuple, dict],
                    chosen: Dict[str, float]) -> List[str]:
    """One line per grid so far: val AP50 per lr on the selection seed (or
    the mean over ``select_seeds``), the selected one bold; a re-selected
    method's second seed and mean, or each seed's values, below it."""
    md, first = [], spec['select_seed']
    for mname, m in spec['methods'].items():
        if 'lrs' not in m or not any(
                (mname, float(lr), s) in results for lr in m['lrs']
                for s in spec['select_seeds']):
            continue  # not run (yet): no line of dashes
        sel = grid_selection(spec, results, mname)

        def cells(texts, bold):
            return ', '.join(
                f'lr {lr:g}: ' + (f'**{text}**' if bold and chosen.get(
                    mname) == float(lr) else text)
                for lr, text in zip(m['lrs'], texts))

        if 'unstable_lr' in sel:
            md.append(f"- {m['label']} (`{mname}`): best lr "
                      f"{sel['unstable_lr']:g}, its next larger grid lr "
                      'collapsed on a selection seed: the stability rule '
                      f"selects {sel['lr']:g} (rankloss_lab.study.selection)")
        if len(spec['select_seeds']) > 1:
            md += _mean_lines(spec, results, mname, sel, cells)
            continue
        md.append(f'- {m["label"]} (`{mname}`): ' + cells(
            [_val_text(results.get((mname, float(lr), first)))
             for lr in m['lrs']], not sel['collapsed']))
        if not sel['collapsed']:
            continue
        again = spec['reselect_seed']
        line = (f'  collapsed on seed {first} (best below '
                f'{100 * COLLAPSE_BELOW:g} %), re-selected with seed {again}: '
                + cells([_val_text(results.get((mname, float(lr), again)))
                         for lr in m['lrs']], False))
        if sel['pending']:
            md.append(line + ' (not finished)')
            continue
        means = [sel['scores'][float(lr)] for lr in m['lrs']]
        md.append(line + f'; mean over seeds {first} and {again}: ' + cells(
            ['diverged' if v == -float('inf') else f'{100 * v:.1f}'
             for v in means], True))
    return md


def _mean_lines(spec: dict, results: Dict[Tuple, dict], mname: str,
                sel: dict, cells) -> List[str]:
    """A grid selected on the mean over ``select_seeds``: means, then seeds."""
    m, seeds = spec['methods'][mname], spec['select_seeds']
    means = []
    for lr in m['lrs']:
        scores = [run_score(results.get((mname, float(lr), s))) for s in seeds]
        means.append('-' if None in scores else 'diverged' if -math.inf in
                     scores else f'{100 * math.fsum(scores) / len(seeds):.1f}')
    head = (f'- {m["label"]} (`{mname}`): mean over seeds '
            f"{', '.join(map(str, seeds))}: " + cells(means, True))
    return [head + (' (not finished)' if sel['pending'] else '')] + [
        f'  seed {s}: ' + cells([_val_text(results.get((mname, float(lr), s)))
                                 for lr in m['lrs']], False) for s in seeds]


def _lrp_lines(spec: dict, results: Dict[Tuple, dict],
               chosen: Dict[str, float],
               per_method: Dict[str, Dict[int, float]]) -> List[str]:
    """The oLRP table (runs that recorded ``test_lrp``; none before)."""
    rows = []
    for mname, values in per_method.items():
        lrps = [results[(mname, chosen[mname], s)].get('test_lrp')
                for s in values]
        lrps = [r for r in lrps if r]
        if not lrps:
            continue
        cells = [mean_std_text([r[key] for r in lrps])
                 for key in ('oLRP', 'oLRP_loc', 'oLRP_FP', 'oLRP_FN')]
        rows.append(f"| {spec['methods'][mname]['label']} | {len(lrps)} | "
                    + ' | '.join(cells) + ' |')
    if not rows:
        return []
    return ['', '## Optimal LRP on test (lower is better)', '',
            'moLRP (Oksuz et al., TPAMI 2021): each class at its own '
            'LRP-optimal score threshold, the mean over the classes with '
            'ground truth, and its localisation, false-positive and '
            'false-negative parts (`LRPMetric`); in %, mean ± sd over '
            'seeds.', '',
            '| method | seeds | oLRP | loc | FP | FN |',
            '|---|---|---|---|---|---|'] + rows


def check_reportable(spec: dict, results: Dict[Tuple, dict],
                     chosen: Dict[str, float],
                     per_method: Dict[str, Dict[int, float]],
                     record: Optional[dict]) -> None:
    """Refuses a report the pre-registration does not allow: changed
    settings, a declared method's test run not under the freeze, test rows
    of a pre-registered study without its freeze file."""
    has_test = any(per_method.values())
    if record is None:
        if spec['preregistered'] and has_test:
            raise PreregistrationError(
                f"study {spec['name']!r} is pre-registered, but its "
                'pre-registration file is not in the report folder: no test '
                'row can be reported')
        return
    check_preregistration(spec, chosen, record)
    frozen_at = datetime.fromisoformat(record['frozen_at'])
    for mname in declared_methods(spec):
        for seed in sorted(per_method.get(mname, {})):
            res = results[(mname, chosen[mname], seed)]
            started = res.get('test_started_at')
            if (started is None
                    or datetime.fromisoformat(started) < frozen_at
                    or res.get('preregistration_sha256') !=
                    record['settings_sha256']):
                raise PreregistrationError(
                    f'{mname} seed {seed}: its test run started '
                    f'{started or "at an unrecorded time"} under '
                    f"pre-registration {res.get('preregistration_sha256')}, "
                    f"not after the freeze of {record['frozen_at']} under "
                    f"{record['settings_sha256']}: it cannot be reported as "
                    'pre-registered')


def seeds_sentence(spec: dict, methods: Sequence[str]) -> str:
    """Whether the ``methods``' selection and test seeds overlap."""
    overlap = seed_overlap(spec, methods)
    unknown = [m for m in methods if selection_seeds(spec, m) is None]
    note = '' if not unknown else (
        ' The selection seeds of ' + ', '.join(f'`{m}`' for m in unknown) +
        ' are not recorded (their lr is declared in the spec without '
        '`selected_on`).')
    if not overlap:
        return ('Selection and test seeds are disjoint: no recorded '
                'selection seed is a test seed.' + note)
    seeds = sorted({s for v in overlap.values() for s in v})
    return (f"**Selection and test seeds overlap:** seed "
            f"{', '.join(map(str, seeds))} selected the learning rates on "
            'val and is also a test seed (its test row is the run that '
            'chose the lr, evaluated on test), for '
            + ', '.join(f'`{m}`' for m in overlap) + '.' + note)


def preregistration_sentence(spec: dict, record: Optional[dict]) -> str:
    if record is None:
        return ('Not pre-registered: every comparison below is exploratory.')
    ids = ', '.join(h['id'] for h in record['settings']['hypotheses'])
    return (f"Pre-registered: `{osp.basename(record['path'])}`, frozen "
            f"{record['frozen_at']} (settings SHA-256 "
            f"`{record['settings_sha256'][:12]}`), " +
            (f'hypotheses {ids}' if ids else 'no hypothesis (an exploratory '
             'study: its settings and test seeds frozen, every comparison '
             'exploratory)') + '; every pre-registered test run started '
            'after the freeze. Rows marked exploratory were not declared.')
