#!/usr/bin/env python
"""Runs a study: configs x learning rates x seeds through MMDetection's runner.

    python tools/study.py SPEC [--phase select|test|all] [--jobs N]
        [--work-dir work_dirs/studies] [--out-dir docs/evidence]
        [--methods NAME ...] [--dry-run] [--report-only]

SPEC is a Python file (``tools/studies/*.py``) naming the methods (a config,
options, a learning-rate grid), the seeds, the baseline and the data. The
protocol is the one a reviewer asks for:

1. ``select``: every method is trained once per learning rate of its grid
   (seed ``select_seed``) and scored on **val** (AP50 after the last epoch);
   the best learning rate is selected (ties: the smaller). Methods with
   ``lr_from`` take another method's selected learning rate (ablations).
2. ``test``: every method is trained with its selected learning rate for
   each seed and evaluated on **test** with ``tools/test.py``, once; the
   val and test detections are also scored for precision / recall at the
   usual thresholds and calibration (D-ECE), before and after a monotone
   Platt fit on val (``mmdet_rankloss.evaluation.calibration``).

Every run is ``tools/train.py`` (then ``tools/test.py``) in its own process
and work directory, ``<work-dir>/<study>/<method>/lr<lr>_seed<seed>/``.
Runs are resumable: a finished run (its ``result.json``) is skipped, an
interrupted one continues from its last checkpoint (``--resume``). Each run
prints a progress line with an ETA. ``--jobs N`` runs N at once (on a
2-core CPU that slows each; use it on a GPU or a bigger machine). A GPU is
used when present (MMEngine's default).

The report (``--out-dir``): ``<study>.csv`` (one row per run: final and
per-epoch val AP50, test AP50, times, calibration), ``<study>.md`` (the
selection grid; mean +/- std over seeds; each method's paired difference to
the baseline on the same seeds with a 95 % t confidence interval; threshold
and calibration table) and ``<study>_curves.png`` (val AP50 against epoch,
mean and band over seeds).
"""
import argparse
import csv
import glob
import json
import math
import os
import os.path as osp
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Sequence, Tuple

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
sys.path.insert(0, ROOT)
from mmdet_rankloss.utils import run_logs  # noqa: E402
from mmdet_rankloss.evaluation.voc_files import (  # noqa: E402
    load_detections, load_voc_ground_truth)
from mmdet_rankloss.utils.run_logs import machine_name  # noqa: E402

METRIC = 'pascal_voc/AP50'
THRESHOLDS = (0.05, 0.3, 0.5)


# ----------------------------------------------------------------- spec
def load_spec(path: str) -> dict:
    """Reads and checks a study spec; returns a plain dict."""
    from mmengine.config import Config
    if not osp.isfile(path):
        raise FileNotFoundError(f'study spec not found: {path}')
    cfg = Config.fromfile(path).to_dict()
    cfg.setdefault('name', osp.splitext(osp.basename(path))[0])
    for key in ('methods', 'seeds', 'baseline'):
        if key not in cfg:
            raise ValueError(f'{path}: the study spec needs {key!r}')
    methods = cfg['methods']
    if not isinstance(methods, dict) or not methods:
        raise ValueError(f'{path}: methods must be a non-empty dict')
    if cfg['baseline'] not in methods:
        raise ValueError(f"{path}: baseline {cfg['baseline']!r} is not one "
                         f'of the methods {sorted(methods)}')
    seeds = cfg['seeds']
    if not seeds or len(set(seeds)) != len(seeds) or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise ValueError(f'{path}: seeds must be distinct ints, got {seeds}')
    cfg.setdefault('select_seed', seeds[0])
    cfg.setdefault('options', [])
    for name, m in methods.items():
        where = f'{path}: method {name!r}'
        if 'config' not in m or not osp.isfile(osp.join(ROOT, m['config'])):
            raise ValueError(f"{where}: config {m.get('config')!r} not found")
        has_grid, has_from = 'lrs' in m, 'lr_from' in m
        if has_grid == has_from:
            raise ValueError(f'{where}: give exactly one of lrs (a grid '
                             'searched on val) and lr_from (another '
                             "method's selected lr)")
        if has_grid and (not m['lrs'] or not all(
                isinstance(lr, (int, float)) and lr > 0 for lr in m['lrs'])):
            raise ValueError(f"{where}: lrs must be positive numbers, got "
                             f"{m['lrs']}")
        if has_from and (m['lr_from'] not in methods
                         or 'lrs' not in methods[m['lr_from']]):
            raise ValueError(f"{where}: lr_from {m['lr_from']!r} must name a "
                             'method with its own lrs')
        m.setdefault('options', [])
        m.setdefault('label', name)
    return cfg


def lr_tag(lr: float) -> str:
    return f'lr{lr:g}'


def run_dir(work_dir: str, study: str, method: str, lr: float,
            seed: int) -> str:
    return osp.join(work_dir, study, method, f'{lr_tag(lr)}_seed{seed}')


def select_plan(spec: dict, methods: Sequence[str]) -> List[Tuple]:
    """(method, lr, seed) of the selection phase."""
    plan = []
    for name in methods:
        for lr in spec['methods'][name].get('lrs', []):
            plan.append((name, float(lr), spec['select_seed']))
    return plan


def selected_lrs(spec: dict, results: Dict[Tuple, dict]) -> Dict[str, float]:
    """Best val AP50 of each grid (ties: smaller lr); lr_from follows.

    A method whose grid is not complete has no selection yet.
    """
    chosen = {}
    for name, m in spec['methods'].items():
        if 'lrs' not in m:
            continue
        scores = []
        for lr in m['lrs']:
            res = results.get((name, float(lr), spec['select_seed']))
            if res is None or res.get('val_ap50') is None:
                break
            scores.append((-res['val_ap50'], float(lr)))
        else:
            chosen[name] = min(scores)[1]
    for name, m in spec['methods'].items():
        if 'lr_from' in m and m['lr_from'] in chosen:
            chosen[name] = chosen[m['lr_from']]
    return chosen


def test_plan(spec: dict, methods: Sequence[str],
              chosen: Dict[str, float]) -> List[Tuple]:
    missing = [m for m in methods if m not in chosen]
    if missing:
        raise RuntimeError(
            f'no learning rate selected yet for {missing}: run the select '
            'phase first (--phase select)')
    return [(m, chosen[m], seed) for m in methods for seed in spec['seeds']]


# ----------------------------------------------------------- one run
def read_scalars(directory: str, key: str = METRIC) -> Dict[int, float]:
    """{epoch: value} of ``key`` logged by a run (train or test logs)."""
    return run_logs.read_scalars(directory, key)


def last_train_record(directory: str) -> dict:
    """The last training-loss record (losses and RaMBO diagnostics)."""
    record = run_logs.last_record(directory, 'loss', train_only=True) or {}
    return {k: v for k, v in record.items()
            if k.startswith(('loss', 'rambo', 'acc'))}


def run_logged(cmd: List[str], log_path: str) -> float:
    return run_logs.run_logged(cmd, log_path, cwd=ROOT)


def load_ground_truth(data_root: str, split: str,
                      classes: Optional[Sequence[str]] = None
                      ) -> Tuple[List[str], list]:
    """Image ids and boxes of a VOC2007 split (default classes: DigitsVOC's)."""
    from mmdet_rankloss.utils.digits_voc import DIGIT_CLASSES
    return load_voc_ground_truth(data_root, split, classes or DIGIT_CLASSES)


def score_calibration(data_root: str, val_pkl: str, test_pkl: str) -> dict:
    """Precision / recall at THRESHOLDS and D-ECE on test, before and after
    a Platt fit on val."""
    from mmdet_rankloss.evaluation.calibration import (
        apply_platt, expected_calibration_error, fit_platt, match_detections,
        precision_recall_at)
    matched = {}
    for split, pkl in (('val', val_pkl), ('test', test_pkl)):
        ids, gts = load_ground_truth(data_root, split)
        dets = load_detections(pkl)
        missing = [i for i in ids if i not in dets]
        if missing:
            raise RuntimeError(f'{pkl}: no detections for {len(missing)} '
                               f'{split} images, e.g. {missing[0]}')
        matched[split] = match_detections([dets[i] for i in ids], gts)
    a, b = fit_platt(*matched['val'][:2])
    scores, is_tp, num_gt = matched['test']
    fixed = apply_platt(scores, a, b)
    return dict(
        platt=[a, b],
        ece=expected_calibration_error(scores, is_tp),
        ece_platt=expected_calibration_error(fixed, is_tp),
        at={str(t): v for t, v in precision_recall_at(
            scores, is_tp, num_gt, THRESHOLDS).items()},
        at_platt={str(t): v for t, v in precision_recall_at(
            fixed, is_tp, num_gt, THRESHOLDS).items()})


def execute_run(spec: dict, method: str, lr: float, seed: int,
                evaluate_test: bool, work_dir: str) -> dict:
    """Trains (or resumes) one run, evaluates it; returns its result."""
    m = spec['methods'][method]
    directory = run_dir(work_dir, spec['name'], method, lr, seed)
    os.makedirs(directory, exist_ok=True)
    result_path = osp.join(directory, 'result.json')
    result = {}
    if osp.isfile(result_path):
        with open(result_path, encoding='utf-8') as f:
            result = json.load(f)
    python = sys.executable
    options = list(spec['options']) + list(m['options']) + [
        f'optim_wrapper.optimizer.lr={lr}', f'randomness.seed={seed}'
    ]
    pretrained = spec.get('pretrained')
    if pretrained:
        options.append(f'load_from={pretrained_checkpoint(spec, work_dir)}')
    log_path = osp.join(directory, 'run.log')
    if 'val_ap50' not in result:
        cmd = [python, 'tools/train.py', m['config'], '--work-dir', directory]
        if osp.isfile(osp.join(directory, 'last_checkpoint')):
            cmd.append('--resume')
        seconds = run_logged(cmd + ['--cfg-options'] + options, log_path)
        curve = read_scalars(directory)
        if not curve:
            raise RuntimeError(f'{directory}: no {METRIC} logged')
        result = dict(
            study=spec['name'], method=method, lr=lr, seed=seed,
            train_seconds=result.get('train_seconds', 0.0) + seconds,
            val_curve=[curve[k] for k in sorted(curve)],
            val_ap50=curve[max(curve)],
            final_train=last_train_record(directory),
            machine=machine_name())
        _write_json(result_path, result)
    if evaluate_test and 'test_ap50' not in result:
        with open(osp.join(directory, 'last_checkpoint')) as f:
            ckpt = f.read().strip()
        start = time.perf_counter()
        pkls = {}
        for split in ('val', 'test'):
            out_dir = osp.join(directory, f'eval_{split}')
            pkls[split] = osp.join(out_dir, 'detections.pkl')
            split_options = [] if split == 'test' else [
                'test_dataloader.dataset.ann_file='
                'VOC2007/ImageSets/Main/val.txt'
            ]
            run_logged([
                python, 'tools/test.py', m['config'], ckpt, '--work-dir',
                out_dir, '--out', pkls[split], '--cfg-options'
            ] + options + split_options, log_path)
        test_ap = read_scalars(osp.join(directory, 'eval_test'))
        if not test_ap:
            raise RuntimeError(f'{directory}: tools/test.py logged no {METRIC}')
        result['test_ap50'] = test_ap[max(test_ap)]
        result['test_seconds'] = time.perf_counter() - start
        try:
            result['calibration'] = score_calibration(
                osp.join(ROOT, spec['data']['root']), pkls['val'],
                pkls['test'])
        except ValueError as err:  # e.g. no true positive on val
            result['calibration'] = dict(error=str(err))
        _write_json(result_path, result)
    return result


def pretrained_checkpoint(spec: dict, work_dir: str) -> str:
    """Final checkpoint of the run a fine-tuning study starts from."""
    pre = spec['pretrained']
    source = load_spec(osp.join(ROOT, pre['spec']))
    results = collect_results(source, work_dir)
    chosen = selected_lrs(source, results)
    if pre['method'] not in chosen:
        raise RuntimeError(
            f"fine-tuning starts from {pre['method']!r} of study "
            f"{source['name']!r}, whose learning rate is not selected yet: "
            f"run tools/study.py {pre['spec']} --phase select first")
    directory = run_dir(work_dir, source['name'], pre['method'],
                        chosen[pre['method']], source['select_seed'])
    with open(osp.join(directory, 'last_checkpoint')) as f:
        return f.read().strip()


def _write_json(path: str, data: dict) -> None:
    tmp = path + '.tmp'
    with open(tmp, 'w', encoding='utf-8') as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)  # never a half-written result


def collect_results(spec: dict, work_dir: str) -> Dict[Tuple, dict]:
    out = {}
    pattern = osp.join(work_dir, spec['name'], '*', '*', 'result.json')
    for path in glob.glob(pattern):
        with open(path, encoding='utf-8') as f:
            res = json.load(f)
        if res.get('method') in spec['methods']:
            out[(res['method'], float(res['lr']), int(res['seed']))] = res
    return out


# ------------------------------------------------------------ statistics
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


def paired_difference(method: Dict[int, float], baseline: Dict[int, float],
                      confidence: float = 0.95) -> Optional[dict]:
    """Mean of per-seed differences and its t confidence interval.

    Only seeds present for both count; None with fewer than 2 pairs.
    """
    seeds = sorted(set(method) & set(baseline))
    if len(seeds) < 2:
        return None
    diffs = [method[s] - baseline[s] for s in seeds]
    mean, std = mean_std(diffs)
    half = t_quantile(len(diffs) - 1, 0.5 + confidence / 2) * std / math.sqrt(
        len(diffs))
    return dict(n=len(diffs), mean=mean, std=std, low=mean - half,
                high=mean + half, diffs=diffs)


# ---------------------------------------------------------------- report
def write_report(spec: dict, results: Dict[Tuple, dict],
                 out_dir: str) -> Dict[str, str]:
    os.makedirs(out_dir, exist_ok=True)
    name = spec['name']
    paths = dict(
        csv=osp.join(out_dir, f'{name}.csv'),
        md=osp.join(out_dir, f'{name}.md'),
        png=osp.join(out_dir, f'{name}_curves.png'))
    chosen = selected_lrs(spec, results)
    rows = sorted(results.values(),
                  key=lambda r: (list(spec['methods']).index(r['method']),
                                 r['lr'], r['seed']))
    max_epochs = max((len(r['val_curve']) for r in rows), default=0)
    with open(paths['csv'], 'w', newline='', encoding='utf-8') as f:
        writer = csv.writer(f)
        writer.writerow(
            ['study', 'method', 'lr', 'seed', 'selected_lr', 'val_ap50',
             'test_ap50', 'train_seconds', 'ece', 'ece_platt'] +
            [f'val_ap50_epoch{e + 1}' for e in range(max_epochs)])
        for r in rows:
            cal = r.get('calibration', {})
            writer.writerow(
                [name, r['method'], r['lr'], r['seed'],
                 chosen.get(r['method']) == r['lr'],
                 _fmt(r.get('val_ap50'), 4), _fmt(r.get('test_ap50'), 4),
                 _fmt(r.get('train_seconds'), 1), _fmt(cal.get('ece'), 4),
                 _fmt(cal.get('ece_platt'), 4)] +
                [_fmt(v, 4) for v in r['val_curve']])
    md = [f'# Study `{name}`', '']
    if spec.get('description'):
        md += [spec['description'].strip(), '']
    machines = sorted({r.get('machine', '?') for r in rows})
    md += [f'Machine: {"; ".join(machines) or "-"}. AP50 in %, VOCMetric '
           '(11 points). Seeds: ' + ', '.join(map(str, spec['seeds'])) +
           f'; learning rates selected on val with seed '
           f'{spec["select_seed"]}.', '']
    md += ['## Learning rate selection (val AP50 after the last epoch)', '']
    for mname, m in spec['methods'].items():
        if 'lrs' not in m or not any(
                (mname, float(lr), spec['select_seed']) in results
                for lr in m['lrs']):
            continue  # not run (yet): no line of dashes
        cells = []
        for lr in m['lrs']:
            res = results.get((mname, float(lr), spec['select_seed']))
            text = '-' if res is None else f'{100 * res["val_ap50"]:.1f}'
            if chosen.get(mname) == float(lr):
                text = f'**{text}**'
            cells.append(f'lr {lr:g}: {text}')
        md.append(f'- {m["label"]} (`{mname}`): ' + ', '.join(cells))
    md += ['', '## Test AP50 at the selected learning rate', '']
    table = []
    per_method = {}
    for mname in spec['methods']:
        if mname not in chosen:
            continue
        lr = chosen[mname]
        per_method[mname] = {
            s: results[(mname, lr, s)]['test_ap50']
            for s in spec['seeds']
            if 'test_ap50' in results.get((mname, lr, s), {})
        }
    base = per_method.get(spec['baseline'], {})
    for mname, values in per_method.items():
        if not values:
            continue
        mean, std = mean_std(list(values.values()))
        diff = paired_difference(values, base)
        diff_text = '-' if mname == spec['baseline'] or diff is None else (
            f'{100 * diff["mean"]:+.1f} [{100 * diff["low"]:+.1f}, '
            f'{100 * diff["high"]:+.1f}]')
        times = [results[(mname, chosen[mname], s)]['train_seconds']
                 for s in values]
        table.append(
            f'| {spec["methods"][mname]["label"]} | {chosen[mname]:g} | '
            f'{len(values)} | {100 * mean:.1f} ± {_pct(std)} | '
            + ', '.join(f'{100 * values[s]:.1f}' for s in sorted(values)) +
            f' | {diff_text} | {mean_std(times)[0]:.0f} |')
    if table:
        md += ['| method | lr | seeds | test AP50 mean ± std | per seed | '
               f'paired diff. to {spec["baseline"]} [95 % CI] | '
               'train time (s) |', '|---|---|---|---|---|---|---|'] + table
    else:  # a selection-only study, or its test phase not run yet
        md.append('No test run (`--phase test`): this report holds the '
                  'learning-rate selection only.')
    cal_rows = []
    for mname in per_method:
        cals = [results[(mname, chosen[mname], s)].get('calibration', {})
                for s in per_method[mname]]
        cals = [c for c in cals if 'ece' in c]
        if not cals:
            continue

        def avg(get):
            vals = [get(c) for c in cals]
            vals = [v for v in vals if v == v]  # drop NaN
            return sum(vals) / len(vals) if vals else float('nan')

        cells = [f'{avg(lambda c: c["ece"]):.3f}',
                 f'{avg(lambda c: c["ece_platt"]):.3f}']
        for t in THRESHOLDS:
            for key in ('at', 'at_platt'):
                p = avg(lambda c: c[key][str(t)]['precision'])
                r = avg(lambda c: c[key][str(t)]['recall'])
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
    if plot_curves(spec, results, chosen, paths['png']):
        md += ['', f'![val AP50 per epoch]({osp.basename(paths["png"])})']
    with open(paths['md'], 'w', encoding='utf-8') as f:
        f.write('\n'.join(md) + '\n')
    return paths


def _fmt(value, digits: int) -> str:
    return '' if value is None else f'{value:.{digits}f}'


def _pct(value: float) -> str:
    return '-' if value != value else f'{100 * value:.1f}'


def plot_curves(spec: dict, results: Dict[Tuple, dict],
                chosen: Dict[str, float], path: str) -> bool:
    """Val AP50 per epoch, mean and min-max band over the seeds."""
    import numpy as np
    curves = {}
    for mname in spec['methods']:
        if mname not in chosen:
            continue
        runs = [results[(mname, chosen[mname], s)]['val_curve']
                for s in spec['seeds'] if (mname, chosen[mname], s) in results]
        runs = [r for r in runs if r]
        if runs:
            length = min(len(r) for r in runs)
            curves[mname] = np.array([r[:length] for r in runs]) * 100
    if not curves:
        return False
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    # one colour and marker per method: the default cycle repeats after 10
    colours = plt.cm.tab20(np.linspace(0, 1, 20))[::2].tolist() + \
        plt.cm.tab20(np.linspace(0, 1, 20))[1::2].tolist()
    markers = 'osD^v<>ph*'
    for i, (mname, arr) in enumerate(curves.items()):
        epochs = np.arange(1, arr.shape[1] + 1)
        label = f'{spec["methods"][mname]["label"]} (lr {chosen[mname]:g}, ' \
            f'{arr.shape[0]} seeds)'
        line, = ax.plot(epochs, arr.mean(0), marker=markers[i % 10], ms=3,
                        color=colours[i % 20], label=label)
        if arr.shape[0] > 1:
            ax.fill_between(epochs, arr.min(0), arr.max(0), alpha=0.2,
                            color=line.get_color())
    ax.set_xlabel('epoch')
    ax.set_ylabel('val AP50 (%)')
    ax.set_title(f'{spec["name"]}: mean, band = min..max over seeds',
                 fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    run_logs.save_figure(fig, path)
    return True


# ------------------------------------------------------------------ main
def ensure_data(spec: dict) -> None:
    data = spec.get('data')
    if not data:
        return
    root = osp.join(ROOT, data['root'])
    if osp.isfile(osp.join(root, 'VOC2007', 'ImageSets', 'Main', 'test.txt')):
        return
    print(f'[study] writing the data set to {root}', flush=True)
    subprocess.run([sys.executable] + [a.format(root=root)
                                       for a in data['make']],
                   cwd=ROOT, check=True)


def run_plan(spec: dict, plan: List[Tuple], evaluate_test: bool,
             work_dir: str, jobs: int, phase: str) -> None:
    results = collect_results(spec, work_dir)
    needed = 'test_ap50' if evaluate_test else 'val_ap50'
    todo = [p for p in plan if needed not in results.get(p, {})]
    print(f'[study] {spec["name"]} {phase}: {len(plan)} runs, '
          f'{len(plan) - len(todo)} done, {len(todo)} to run', flush=True)
    start = time.perf_counter()
    finished = [0]

    def one(item):
        method, lr, seed = item
        t0 = time.perf_counter()
        res = execute_run(spec, method, lr, seed, evaluate_test, work_dir)
        finished[0] += 1
        elapsed = time.perf_counter() - start
        eta = elapsed / finished[0] * (len(todo) - finished[0]) / max(jobs, 1)
        test = (f', test AP50 {100 * res["test_ap50"]:.1f}'
                if 'test_ap50' in res else '')
        print(f'[study] {phase} {finished[0]}/{len(todo)} {method} '
              f'lr={lr:g} seed={seed}: val AP50 {100 * res["val_ap50"]:.1f}'
              f'{test} ({time.perf_counter() - t0:.0f} s); ETA '
              f'{eta / 60:.1f} min', flush=True)
        return res

    run_each(one, todo, jobs)


def run_each(one, items: Sequence, jobs: int) -> None:
    """``one(item)`` for every item, ``jobs`` at a time (threads that wait
    on training processes); the first error is raised at the end."""
    if jobs > 1:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(one, items))
    else:
        for item in items:
            one(item)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('spec', help='study spec (tools/studies/*.py)')
    parser.add_argument('--phase', choices=('select', 'test', 'all'),
                        default='all')
    parser.add_argument('--jobs', type=int, default=1)
    parser.add_argument('--work-dir', default='work_dirs/studies')
    parser.add_argument('--out-dir', default='docs/evidence')
    parser.add_argument('--methods', nargs='+',
                        help='only these methods (default: all)')
    parser.add_argument('--dry-run', action='store_true',
                        help='print the runs that would be started and '
                        'write no report')
    parser.add_argument('--report-only', action='store_true',
                        help='write the report from finished runs only')
    return parser.parse_args(argv)


def requested_methods(spec: dict, methods: Optional[Sequence[str]]
                      ) -> List[str]:
    """``--methods`` (all of the spec's when None), checked."""
    methods = list(methods or spec['methods'])
    unknown = sorted(set(methods) - set(spec['methods']))
    if unknown:
        raise SystemExit(f'unknown methods {unknown}; the spec has '
                         f'{sorted(spec["methods"])}')
    return methods


def main(argv=None) -> Dict[str, str]:
    args = parse_args(argv)
    spec = load_spec(args.spec)
    work_dir = osp.abspath(args.work_dir)
    methods = requested_methods(spec, args.methods)
    # a method with lr_from needs that method's grid
    grid_methods = sorted(
        {spec['methods'][m].get('lr_from', m) for m in methods},
        key=list(spec['methods']).index)
    if not args.report_only:
        ensure_data(spec)
        if args.phase in ('select', 'all'):
            plan = select_plan(spec, grid_methods)
            if args.dry_run:
                print('\n'.join(map(str, plan)))
            else:
                run_plan(spec, plan, False, work_dir, args.jobs, 'select')
        if args.phase in ('test', 'all'):
            chosen = selected_lrs(spec, collect_results(spec, work_dir))
            if args.dry_run:
                try:
                    plan = test_plan(spec, methods, chosen)
                except RuntimeError as error:  # the selection is not run
                    print(f'[study] test runs follow the selection: {error}')
                else:
                    print('\n'.join(map(str, plan)))
            else:
                plan = test_plan(spec, methods, chosen)
                run_plan(spec, plan, True, work_dir, args.jobs, 'test')
    if args.dry_run:  # prints the plan, writes nothing
        return {}
    paths = write_report(spec, collect_results(spec, work_dir), args.out_dir)
    print(f'[study] report: {paths["md"]}, {paths["csv"]}', flush=True)
    return paths


if __name__ == '__main__':
    main()
