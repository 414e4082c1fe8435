"""Retrieval losses compared as a reviewer would: own lr on val, seeds, CIs.

``python tools/retrieval_study.py SPEC``: each (method, lr, seed) of SPEC is
one ``tools/retrieval_quickstart.py`` run (the method's ``args``); a method's
lr has the best mean val R@1 over all seeds (ties: smaller; docs/retrieval.md).
"""
import argparse
import csv
import os
import os.path as osp
import sys
from typing import Dict, List, Tuple

from rankloss_lab import stats
from rankloss_lab.paths import ROOT
from rankloss_lab.run_logs import run_logged
from rankloss_lab.runner import read_json, run_dir, run_plan as run_runs
from rankloss_lab.stats import mean_std_text as _pm
from rankloss_lab.study import load_spec, requested_methods

TRAINED, PIXELS, UNTRAINED = ('trained, final epoch', 'pixels, no network',
                              'untrained network')


def plan(spec: dict, methods: List[str]) -> List[Tuple[str, float, int]]:
    return [(m, float(lr), seed) for m in methods
            for lr in spec['methods'][m]['lrs'] for seed in spec['seeds']]


def read_run(directory: str, seed: int):
    """The seed's numbers of a finished run, or None."""
    data = read_json(osp.join(directory, 'results.json'))
    if data is None:
        return None
    run = data['seeds'].get(str(seed))
    if run is not None:
        run['machine'] = data.get('machine')
    return run


def collect(spec: dict, work_dir: str) -> Dict[Tuple, dict]:
    out = {}
    for method, lr, seed in plan(spec, list(spec['methods'])):
        run = read_run(run_dir(work_dir, spec['name'], method, lr, seed),
                       seed)
        if run is not None:
            out[(method, lr, seed)] = run
    return out


def select(spec: dict, results: Dict[Tuple, dict]) -> Dict[str, dict]:
    """``{method: dict(lr, grid={lr: mean val R@1 or None})}``; a method
    whose grid is not complete on every seed has ``lr`` None."""
    chosen = {}
    for name, m in spec['methods'].items():
        grid = {}
        for lr in map(float, m['lrs']):
            vals = [results.get((name, lr, s), {}).get('last_val_r1')
                    for s in spec['seeds']]
            grid[lr] = None if None in vals else sum(vals) / len(vals)
        done = None not in grid.values()
        best = min(grid, key=lambda lr: (-grid[lr], lr)) if done else None
        chosen[name] = dict(lr=best, grid=grid)
    return chosen


def execute(spec: dict, method: str, lr: float, seed: int,
            work_dir: str) -> dict:
    directory = run_dir(work_dir, spec['name'], method, lr, seed)
    os.makedirs(directory, exist_ok=True)
    cmd = [sys.executable, osp.join(ROOT, 'tools', 'retrieval_quickstart.py'),
           '--config', osp.join(ROOT, spec['methods'][method]['config']),
           '--seeds', str(seed), '--work-dir', directory, '--cfg-options',
           f'optim_wrapper.optimizer.lr={lr!r}'] + list(spec.get(
               'options', [])) + list(spec['methods'][method].get('args', []))
    run_logged(cmd, osp.join(directory, 'run.log'), cwd=ROOT)
    run = read_run(directory, seed)
    if run is None:
        raise RuntimeError(f'{directory}: the run wrote no results.json')
    return run


def run_plan(spec: dict, todo_plan: List[Tuple], work_dir: str,
             jobs: int) -> None:
    """The runs of ``todo_plan`` not finished yet (``rankloss_lab.runner``)."""
    results = collect(spec, work_dir)

    def describe(item, run):
        method, lr, seed = item
        return (f'{method} lr={lr:g} seed={seed}: val R@1 '
                f'{100 * run["last_val_r1"]:.1f}, test R@1 '
                f'{100 * run[TRAINED]["R@1"]:.1f}')

    run_runs(todo_plan, lambda item: execute(spec, *item, work_dir),
             lambda item: item in results, describe, jobs,
             header=f'[retrieval study] {spec["name"]}',
             prefix='[retrieval study] ')


def write_report(spec: dict, results: Dict[Tuple, dict],
                 out_dir: str) -> Dict[str, str]:
    os.makedirs(out_dir, exist_ok=True)
    name = spec['name']
    paths = dict(md=osp.join(out_dir, f'{name}.md'),
                 csv=osp.join(out_dir, f'{name}.csv'))
    chosen = select(spec, results)
    with open(paths['csv'], 'w', newline='', encoding='utf-8') as f:
        writer = csv.writer(f)
        writer.writerow(['study', 'method', 'lr', 'seed', 'selected_lr',
                         'val_r1', 'test_r1', 'test_r8', 'test_map_at_r',
                         'seconds'])
        for (method, lr, seed), run in sorted(results.items()):
            writer.writerow([
                name, method, lr, seed, chosen[method]['lr'] == lr,
                f'{run["last_val_r1"]:.4f}', f'{run[TRAINED]["R@1"]:.4f}',
                f'{run[TRAINED]["R@8"]:.4f}', f'{run[TRAINED]["MAP@R"]:.4f}',
                f'{run["seconds"]:.1f}'])
    machines = sorted({r.get('machine') or '?' for r in results.values()})
    md = [f'# Retrieval study `{name}`', '', spec.get('description', ''), '',
          f'Machine: {", ".join(machines)}. Recall in %; seeds '
          f'{", ".join(map(str, spec["seeds"]))}; each lr chosen by the mean '
          'val R@1 over these seeds (so selection and test seeds overlap); '
          'the test split is only reported. Not pre-registered: every '
          'comparison is exploratory.', '',
          '## Learning rate selection (val R@1 at the last evaluation, mean '
          'over seeds)', '']
    for method, c in chosen.items():
        cells = ', '.join(
            f'lr {lr:g}: ' + ('-' if v is None else
                              (f'**{100 * v:.1f}**' if lr == c['lr'] else
                               f'{100 * v:.1f}'))
            for lr, v in c['grid'].items())
        md.append(f'- {spec["methods"][method]["label"]} (`{method}`): '
                  f'{cells}')
    md += ['', '## Test at the selected learning rate', '',
           '| embedding | lr | seeds | R@1 | per seed | R@8 | MAP@R | paired '
           f'R@1 diff. to {spec["baseline"]} [95 % CI] | Bonferroni CI | '
           'Holm p | s per run |',
           '|---|---|---|---|---|---|---|---|---|---|---|']
    base = chosen[spec['baseline']]['lr']
    base_r1 = {s: results[(spec['baseline'], base, s)][TRAINED]['R@1']
               for s in spec['seeds']
               if (spec['baseline'], base, s) in results}
    if base is not None and base_r1:
        runs = [results[(spec['baseline'], base, s)] for s in base_r1]
        for row, label in ((PIXELS, 'raw pixels (no network)'),
                           (UNTRAINED, 'untrained network')):
            md.append(f'| {label} | - | {len(runs)} | '
                      f'{_pm([r[row]["R@1"] for r in runs])} | '
                      + ', '.join(f'{100 * r[row]["R@1"]:.1f}' for r in runs)
                      + f' | {_pm([r[row]["R@8"] for r in runs])} | '
                      f'{_pm([r[row]["MAP@R"] for r in runs])} | | | | |')
    comparisons = {c['method']: c for c in family(spec, chosen, results,
                                                  base_r1)}
    for method, c in chosen.items():
        if c['lr'] is None:
            continue
        runs = {s: results[(method, c['lr'], s)] for s in spec['seeds']
                if (method, c['lr'], s) in results}
        r1 = {s: r[TRAINED]['R@1'] for s, r in runs.items()}
        diff = bonf = holm_p = ''
        if method in comparisons:
            pair = comparisons[method]
            diff = stats.ci_text(dict(pair, mean=pair['diff']['mean']))
            bonf = stats.interval_text(pair)
            holm_p = f'{pair["p_holm"]:.4f}' + (
                ' (significant)' if pair['significant'] else '')
        seconds = sum(r['seconds'] for r in runs.values()) / len(runs)
        md.append(
            f'| {spec["methods"][method]["label"]} | {c["lr"]:g} | '
            f'{len(runs)} | {_pm(list(r1.values()))} | '
            + ', '.join(f'{100 * v:.1f}' for v in r1.values())
            + f' | {_pm([r[TRAINED]["R@8"] for r in runs.values()])} | '
            f'{_pm([r[TRAINED]["MAP@R"] for r in runs.values()])} | {diff} | '
            f'{bonf} | {holm_p} | {seconds:.0f} |')
    if comparisons:
        m = next(iter(comparisons.values()))['m']
        md += ['', f'{m} comparison{"s" if m != 1 else ""} with '
               f'{spec["baseline"]} (two-sided paired t on R@1): the '
               f'Bonferroni interval is at level 1 - {spec["alpha"]:g}/{m}, '
               'Holm p is the Holm-adjusted paired t-test p-value '
               f'("significant": at most {spec["alpha"]:g}).']
    with open(paths['md'], 'w', encoding='utf-8') as f:
        f.write('\n'.join(md) + '\n')
    return paths


def family(spec: dict, chosen: Dict[str, dict], results: Dict[Tuple, dict],
           base_r1: Dict[int, float]) -> List[dict]:
    """Every method's R@1 against the baseline, two-sided, Bonferroni, Holm."""
    members = []
    for method, c in chosen.items():
        if method == spec['baseline'] or c['lr'] is None:
            continue
        r1 = {s: results[(method, c['lr'], s)][TRAINED]['R@1']
              for s in spec['seeds'] if (method, c['lr'], s) in results}
        pair = stats.paired_difference(r1, base_r1)
        if pair is not None:
            members.append(dict(method=method, baseline=spec['baseline'],
                                alternative='two-sided', diff=pair))
    return stats.corrected_family(members, spec['alpha'])


def main(argv=None) -> Dict[str, str]:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('spec')
    parser.add_argument('--methods', nargs='+')
    parser.add_argument('--jobs', type=int, default=1)
    parser.add_argument('--work-dir', default='work_dirs/retrieval_studies')
    parser.add_argument('--out-dir', default='docs/evidence')
    parser.add_argument('--report-only', action='store_true')
    args = parser.parse_args(argv)
    spec = load_spec(args.spec)
    methods = requested_methods(spec, args.methods)
    if any('lrs' not in spec['methods'][m] for m in methods):
        raise SystemExit('every method of a retrieval study needs its own '
                         'lrs')
    work_dir = osp.abspath(args.work_dir)
    if not args.report_only:
        run_plan(spec, plan(spec, methods), work_dir, args.jobs)
    paths = write_report(spec, collect(spec, work_dir), args.out_dir)
    print(f'[retrieval study] report: {paths["md"]}, {paths["csv"]}',
          flush=True)
    return paths


if __name__ == '__main__':
    main()
