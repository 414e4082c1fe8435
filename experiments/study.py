"""Runs a study: configs x learning rates x seeds through MMDetection's runner.

    python tools/study.py SPEC [--phase select|test|all] [--jobs N]
        [--work-dir work_dirs/studies] [--out-dir docs/evidence]
        [--methods NAME ...] [--dry-run] [--report-only]
    python tools/study.py SPEC --freeze      # pre-register, before the test

SPEC is a Python file (``experiments/studies/*.py``) naming the methods (a
config, options, a learning-rate grid), the seeds, the baseline and the
data. The protocol is the one a reviewer asks for:

1. ``select``: every method is trained once per learning rate of its grid
   (seed ``select_seed``) and scored on **val** (AP50 after the last epoch);
   the best learning rate is selected (ties: the smaller). Methods with
   ``lr_from`` take another method's selected learning rate (ablations).
2. ``test``: every method is trained with its selected learning rate for
   each seed (all methods of one seed before the next seed, so that a test
   phase stopped half-way leaves paired runs) and evaluated on **test**
   with ``tools/test.py``, once; the
   val and test detections are also scored for precision / recall at the
   usual thresholds and calibration (D-ECE), before and after a monotone
   Platt fit on val (``mmdet_rankloss.evaluation.calibration``).
   ``test_split`` (default ``test``) names the VOC split list evaluated;
   the spec's ``data.make_test`` command writes it when it is missing
   (e.g. ``tools/make_digits_voc.py {root} --fresh-test confirm``).
   ``prepare`` (a list of ``dict(path=..., make=[script, args...])``) names
   other files the runs need (e.g. a pretrained backbone); a missing one is
   written by its command before the first run.

Seeds: the selection seed (``select_seed``) defaults to the smallest seed
>= 0 that is not a test seed, so selection and test seeds are disjoint. The
DigitsVOC studies set ``select_seed = 0``, also their first test seed (the
test row of seed 0 is the run that selected the lr); their reports say so.
A method may also carry a learning rate selected before (``lr``, with
``selected_on=dict(study=..., seeds=[...])``): it has no grid here.

Pre-registration (``--freeze``): writes ``<out-dir>/<study>_preregistration
.json`` and ``.md`` before any test run: the ``hypotheses`` (spec key: a list
of ``dict(method, baseline, alternative='greater'|'less'|'two-sided')``; by
default every method against the baseline, two-sided), the test seeds, the
selected settings of the declared methods (config, options, lr), the date
and a SHA-256 of those settings. It refuses while a declared method has no
selected lr or already has a test result. Once a freeze exists (and always
for a spec with ``preregistered = True``), the test phase refuses to run
when the settings differ from the frozen ones (naming each field and both
values), tests only the declared methods (others with ``--exploratory``),
and stamps each test run with its start time and the frozen hash; the
report refuses to report when the settings differ or a declared test run
did not start after the freeze, and labels undeclared rows exploratory.

Every run is ``tools/train.py`` (then ``tools/test.py``) in its own process
and work directory, ``<work-dir>/<study>/<method>/lr<lr>_seed<seed>/``.
Runs are resumable: a finished run (its ``result.json``) is skipped, an
interrupted one continues from its last checkpoint (``--resume``). Each
result is also kept in ``<records-dir>/<study>/`` (default
``<out-dir>/runs``, committed with the report): a study resumes, and its
report is written, from those records when the work directories are gone,
e.g. on another machine. Each run
prints a progress line with an ETA. ``--jobs N`` runs N at once (on a
2-core CPU that slows each; use it on a GPU or a bigger machine). A GPU is
used when present (MMEngine's default).

The report (``--out-dir``): ``<study>.csv`` (one row per run: final and
per-epoch val AP50, test AP50, times, calibration), ``<study>.md`` (the
selection grid; mean +/- std over seeds; each method's paired difference to
the baseline on the same seeds with a 95 % t confidence interval and,
beside it, the Bonferroni interval at level 1 - alpha / m over the study's
m comparisons; paired t-test and Holm-adjusted p-values; threshold and
calibration table), ``<study>_comparisons.csv`` (one row per comparison,
raw and corrected) and ``<study>_curves.png`` (val AP50 against epoch, mean
and band over seeds). Pre-registered hypotheses form one family, the other
comparisons an exploratory one: every other method against the baseline,
plus the pairs the spec lists in ``exploratory_comparisons`` (e.g. against
a baseline row added after a test result).
"""
import argparse
import csv
import glob
import hashlib
import json
import os
import os.path as osp
import subprocess
import sys
import time
from datetime import datetime, timezone
from typing import Dict, List, Optional, Sequence, Tuple

from experiments import run_logs, runner
from experiments.run_logs import machine_name
from experiments.runner import (last_checkpoint, lr_tag,  # noqa: F401
                                read_json, run_dir, write_json)
from experiments.stats import (ALTERNATIVES, corrected_family,  # noqa: F401
                               holm, interval_text, mean_std,
                               paired_difference, paired_t_pvalue,
                               t_interval, t_quantile)
from mmdet_rankloss.evaluation.voc_files import (load_detections,
                                                 load_voc_ground_truth)

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
SPEC_DIR = osp.join('experiments', 'studies')
METRIC = 'pascal_voc/AP50'
THRESHOLDS = (0.05, 0.3, 0.5)


# ----------------------------------------------------------------- spec
def find_spec(path: str) -> str:
    """``path``, or where a spec named by its old place (``tools/studies/``,
    as in the pre-registration records written before the move) is now."""
    if osp.isfile(path):
        return path
    head, name = osp.split(osp.normpath(path))
    if osp.basename(head) == 'studies' and osp.basename(
            osp.dirname(head)) == 'tools':
        moved = osp.join(ROOT, SPEC_DIR, name)
        if osp.isfile(moved):
            print(f'[study] {path} moved to {osp.join(SPEC_DIR, name)}',
                  flush=True)
            return moved
    raise FileNotFoundError(f'study spec not found: {path}')


def load_spec(path: str) -> dict:
    """Reads and checks a study spec; returns a plain dict."""
    from mmengine.config import Config
    path = find_spec(path)
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
    # Selection and test seeds are disjoint unless the spec says otherwise:
    # the default selection seed is the smallest seed >= 0 that is not a
    # test seed. (The DigitsVOC studies set ``select_seed = 0``, also their
    # first test seed: that overlap is kept for them and said in reports.)
    cfg.setdefault('select_seed', min(set(range(len(seeds) + 1)) -
                                      set(seeds)))
    cfg.setdefault('options', [])
    cfg.setdefault('test_split', 'test')
    cfg.setdefault('alpha', 0.05)
    cfg.setdefault('preregistered', False)
    if not isinstance(cfg['test_split'], str) or not cfg['test_split']:
        raise ValueError(f'{path}: test_split must name a VOC split list, '
                         f"got {cfg['test_split']!r}")
    if not 0 < cfg['alpha'] < 1:
        raise ValueError(f"{path}: alpha must lie in (0, 1), got "
                         f"{cfg['alpha']!r}")
    for name, m in methods.items():
        where = f'{path}: method {name!r}'
        if 'config' not in m or not osp.isfile(osp.join(ROOT, m['config'])):
            raise ValueError(f"{where}: config {m.get('config')!r} not found")
        kinds = [k for k in ('lrs', 'lr', 'lr_from') if k in m]
        if len(kinds) != 1:
            raise ValueError(f'{where}: give exactly one of lrs (a grid '
                             'searched on val), lr (a learning rate selected '
                             'before, see selected_on) and lr_from (another '
                             "method's selected lr)")
        if 'lrs' in m and (not m['lrs'] or not all(
                _is_number(lr) and lr > 0 for lr in m['lrs'])):
            raise ValueError(f"{where}: lrs must be positive numbers, got "
                             f"{m['lrs']}")
        if 'lr' in m and not (_is_number(m['lr']) and m['lr'] > 0):
            raise ValueError(f"{where}: lr must be a positive number, got "
                             f"{m['lr']!r}")
        if 'lr_from' in m and (m['lr_from'] not in methods or not (
                {'lrs', 'lr'} & set(methods[m['lr_from']]))):
            raise ValueError(f"{where}: lr_from {m['lr_from']!r} must name a "
                             'method with its own lrs or lr')
        on = m.get('selected_on')
        if on is not None and not (isinstance(on, dict) and all(
                isinstance(s, int) for s in on.get('seeds', [None]))):
            raise ValueError(f'{where}: selected_on must be a dict with the '
                             f'seeds (ints) the lr was selected with, got '
                             f'{on!r}')
        m.setdefault('options', [])
        m.setdefault('label', name)
    cfg.setdefault('prepare', [])
    for item in cfg['prepare']:
        if not (isinstance(item, dict) and isinstance(item.get('path'), str)
                and isinstance(item.get('make'), (list, tuple))
                and item['make']):
            raise ValueError(f'{path}: each prepare entry must be '
                             "dict(path='<file>', make=[<script>, <args>...])"
                             f', got {item!r}')
    cfg['hypotheses'] = _hypotheses(cfg, path)
    cfg['exploratory_comparisons'] = _exploratory_comparisons(cfg, path)
    return cfg


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)



def _hypotheses(cfg: dict, path: str) -> List[dict]:
    """The spec's ``hypotheses``, checked and completed.

    Each is ``dict(method=..., baseline=<the spec's>, alternative=
    'greater' | 'less' | 'two-sided')`` on the metric test AP50: 'greater'
    states ``method - baseline > 0``. Without ``hypotheses`` every method is
    compared with the baseline, two-sided.
    """
    methods = cfg['methods']
    declared = cfg.get('hypotheses')
    if declared is None:
        declared = [dict(method=m) for m in methods if m != cfg['baseline']]
    out, seen = [], set()
    for i, h in enumerate(declared):
        if not isinstance(h, dict) or 'method' not in h:
            raise ValueError(f'{path}: hypothesis {i + 1} must be a dict '
                             f'with a method, got {h!r}')
        h = dict(h)
        h.setdefault('baseline', cfg['baseline'])
        h.setdefault('alternative', 'two-sided')
        _check_pair(h, methods, seen, f'{path}: hypothesis {i + 1}')
        if h['alternative'] not in ALTERNATIVES:
            raise ValueError(f'{path}: hypothesis {i + 1}: alternative must '
                             f'be one of {ALTERNATIVES}, got '
                             f"{h['alternative']!r}")
        h.setdefault('id', f'H{i + 1}')
        h['metric'] = 'test AP50'
        out.append(h)
    return out


def _check_pair(pair: dict, methods: dict, seen: set, where: str) -> None:
    """One comparison of a spec (a hypothesis or an exploratory pair): both
    sides name methods, differ, and the pair is not in ``seen`` (the pairs
    before it), to which it is then added."""
    for key in ('method', 'baseline'):
        if pair[key] not in methods:
            raise ValueError(f'{where}: {key} {pair[key]!r} is not one of '
                             f'the methods {sorted(methods)}')
    if pair['method'] == pair['baseline']:
        raise ValueError(f"{where} compares {pair['method']!r} with itself")
    key = (pair['method'], pair['baseline'])
    if key in seen:
        raise ValueError(f'{where} repeats a hypothesis or an earlier '
                         f'comparison: {key[0]} against {key[1]}')
    seen.add(key)


def _exploratory_comparisons(cfg: dict, path: str) -> List[dict]:
    """The spec's ``exploratory_comparisons``, checked.

    Pairs ``dict(method=..., baseline=...)`` beyond "every method against
    the study's baseline", e.g. against a baseline row added after a test
    result; they join the exploratory family (two-sided), so a row chosen
    after seeing test never gets a confirmatory claim.
    """
    methods = cfg['methods']
    declared = cfg.get('exploratory_comparisons', [])
    if not isinstance(declared, (list, tuple)):
        raise ValueError(f'{path}: exploratory_comparisons must be a list of '
                         f'dict(method, baseline), got {declared!r}')
    taken = {(h['method'], h['baseline']) for h in cfg['hypotheses']}
    out = []
    for i, c in enumerate(declared):
        if not (isinstance(c, dict) and set(c) == {'method', 'baseline'}):
            raise ValueError(f'{path}: exploratory comparison {i + 1} must be '
                             f'dict(method=..., baseline=...), got {c!r}')
        _check_pair(c, methods, taken,
                    f'{path}: exploratory comparison {i + 1}')
        out.append(dict(c))
    return out


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
        if 'lr' in m:  # selected before this study (``selected_on``)
            chosen[name] = float(m['lr'])
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
    # seed by seed: a test phase stopped half-way leaves whole pairs
    return [(m, chosen[m], seed) for seed in spec['seeds'] for m in methods]


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
    from mmdet_rankloss.datasets.digits_voc import DIGIT_CLASSES
    return load_voc_ground_truth(data_root, split, classes or DIGIT_CLASSES)


def score_calibration(data_root: str, val_pkl: str, test_pkl: str,
                      test_split: str = 'test') -> dict:
    """Precision / recall at THRESHOLDS and D-ECE on test (the VOC split
    list ``test_split``), before and after a Platt fit on val."""
    from mmdet_rankloss.evaluation.calibration import (
        apply_platt, expected_calibration_error, fit_platt, match_detections,
        precision_recall_at)
    matched = {}
    for split, pkl in (('val', val_pkl), ('test', test_pkl)):
        ids, gts = load_ground_truth(data_root,
                                     test_split if split == 'test' else split)
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


ATTEMPTS = 'attempts.json'


def start_attempt(directory: str) -> List[dict]:
    """Notes the start of a training attempt in the run's folder; returns
    all attempts so far.

    A run stopped part-way resumes from its last checkpoint, so its train
    time is that of every attempt up to the checkpoint the next one resumed
    from (``earlier_attempts_seconds``) plus the last attempt's: an
    interrupted run is neither under- nor over-counted in the report's
    wall time. Each attempt records when it started and the modification
    time of the checkpoint it resumes from.
    """
    path = osp.join(directory, ATTEMPTS)
    attempts = read_json(path) or []
    ckpt = last_checkpoint(directory)
    resumed_from = (osp.getmtime(ckpt) if ckpt and osp.isfile(ckpt) else
                    None)
    attempts.append(dict(started=time.time(), resumed_from=resumed_from))
    write_json(path, attempts)
    return attempts


def earlier_attempts_seconds(attempts: Sequence[dict]) -> float:
    """Train time of every attempt but the last: from its start to the
    checkpoint the next attempt resumed from (work after that checkpoint
    was lost and redone, so it is not counted)."""
    total = 0.0
    for before, after in zip(attempts, attempts[1:]):
        if after.get('resumed_from') is not None:
            total += max(0.0, after['resumed_from'] - before['started'])
    return total


def execute_run(spec: dict, method: str, lr: float, seed: int,
                evaluate_test: bool, work_dir: str,
                preregistration: Optional[str] = None,
                records: Optional[str] = None) -> dict:
    """Trains (or resumes) one run, evaluates it; returns its result.

    The test evaluation records when it started and the settings hash of
    the pre-registration it ran under (``preregistration``, or None), which
    the report checks. With ``records`` (a folder), each result is also
    written there (``record_path``), and a run whose record already holds
    what is asked is not run again, even without its work directory.
    """
    m = spec['methods'][method]
    needed = 'test_ap50' if evaluate_test else 'val_ap50'
    recorded = read_json(record_path(records, spec, method, lr, seed)
                         ) if records else None
    directory = run_dir(work_dir, spec['name'], method, lr, seed)
    result_path = osp.join(directory, 'result.json')
    result = read_json(result_path) or {}
    if recorded and needed in recorded and needed not in result:
        return recorded
    os.makedirs(directory, exist_ok=True)

    def save(result):
        write_json(result_path, result)
        if records:
            path = record_path(records, spec, method, lr, seed)
            os.makedirs(osp.dirname(path), exist_ok=True)
            write_json(path, result)
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
        if last_checkpoint(directory):
            cmd.append('--resume')
        attempts = start_attempt(directory)
        seconds = run_logged(cmd + ['--cfg-options'] + options, log_path)
        curve = read_scalars(directory)
        if not curve:
            raise RuntimeError(f'{directory}: no {METRIC} logged')
        result = dict(
            study=spec['name'], method=method, lr=lr, seed=seed,
            train_seconds=earlier_attempts_seconds(attempts) + seconds,
            val_curve=[curve[k] for k in sorted(curve)],
            val_ap50=curve[max(curve)],
            final_train=last_train_record(directory),
            machine=machine_name())
        if len(attempts) > 1:
            result['resumed'] = len(attempts) - 1
        if attempts[0]['resumed_from'] is not None:
            # resumed from an attempt that left no record of its start
            result['train_seconds_partial'] = True
        save(result)
    if evaluate_test and 'test_ap50' not in result:
        ckpt = last_checkpoint(directory, required=True)
        result['test_started_at'] = _now()
        result['preregistration_sha256'] = preregistration
        start = time.perf_counter()
        pkls = {}
        test_split = spec.get('test_split', 'test')
        for split in ('val', 'test'):
            out_dir = osp.join(directory, f'eval_{split}')
            pkls[split] = osp.join(out_dir, 'detections.pkl')
            listed = test_split if split == 'test' else 'val'
            split_options = [] if listed == 'test' else [
                'test_dataloader.dataset.ann_file='
                f'VOC2007/ImageSets/Main/{listed}.txt'
            ]
            run_logged([
                python, 'tools/test.py', m['config'], ckpt, '--work-dir',
                out_dir, '--out', pkls[split], '--cfg-options'
            ] + options + split_options, log_path)
        test_ap = read_scalars(osp.join(directory, 'eval_test'))
        if not test_ap:
            raise RuntimeError(f'{directory}: tools/test.py logged no {METRIC}')
        result['test_ap50'] = test_ap[max(test_ap)]
        result['test_split'] = test_split
        result['test_seconds'] = time.perf_counter() - start
        try:
            result['calibration'] = score_calibration(
                osp.join(ROOT, spec['data']['root']), pkls['val'],
                pkls['test'], test_split)
        except ValueError as err:  # e.g. no true positive on val
            result['calibration'] = dict(error=str(err))
        save(result)
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
    return last_checkpoint(directory, required=True)


def record_path(records: str, spec: dict, method: str, lr: float,
                seed: int) -> str:
    """``<records>/<study>/<method>_lr<lr>_seed<seed>.json``: the copy of a
    run's result kept with the report, so that a study resumes without the
    work directories (which hold the checkpoints and stay out of git)."""
    return osp.join(records, spec['name'],
                    f'{method}_{lr_tag(lr)}_seed{seed}.json')


def collect_results(spec: dict, work_dir: str,
                    records: Optional[str] = None) -> Dict[Tuple, dict]:
    """Finished runs of the study, from the work directories and, when
    given, the records folder; of two results of one run, the one with a
    test result (the work directory's when both or neither have one)."""
    out = {}
    patterns = [osp.join(work_dir, spec['name'], '*', '*', 'result.json')]
    if records:
        patterns.insert(0, osp.join(records, spec['name'], '*.json'))
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            with open(path, encoding='utf-8') as f:
                res = json.load(f)
            if res.get('method') not in spec['methods']:
                continue
            key = (res['method'], float(res['lr']), int(res['seed']))
            if 'test_ap50' in res or 'test_ap50' not in out.get(key, {}):
                out[key] = res
    return out


# ------------------------------------------------------ pre-registration
class PreregistrationError(RuntimeError):
    """A test run or a report that the study's pre-registration forbids."""


def preregistration_paths(spec: dict, out_dir: str) -> Tuple[str, str]:
    """``<out-dir>/<study>_preregistration.json`` and its ``.md``."""
    base = osp.join(out_dir, f"{spec['name']}_preregistration")
    return base + '.json', base + '.md'


def declared_methods(spec: dict) -> List[str]:
    """The methods the hypotheses name (tested or baseline), spec order."""
    names = {h[k] for h in spec['hypotheses'] for k in ('method', 'baseline')}
    return [m for m in spec['methods'] if m in names]


def _plain(value):
    """A JSON round trip: tuples become lists, as in the frozen file."""
    return json.loads(json.dumps(value, sort_keys=True))


def study_settings(spec: dict, chosen: Dict[str, float]) -> dict:
    """What a pre-registration freezes: everything that decides the test
    runs and their comparison (not the labels, notes or descriptions)."""
    methods = {}
    for name in declared_methods(spec):
        m = spec['methods'][name]
        lr = chosen.get(name)
        methods[name] = dict(config=m['config'], options=list(m['options']),
                             lr=None if lr is None else float(lr))
    return _plain(dict(
        study=spec['name'], metric=f'test AP50 ({METRIC}, VOCMetric)',
        test_split=spec['test_split'], test_seeds=list(spec['seeds']),
        select_seed=spec['select_seed'], alpha=spec['alpha'],
        data=spec.get('data'), options=list(spec['options']),
        pretrained=spec.get('pretrained'),
        hypotheses=[{k: h[k] for k in ('id', 'method', 'baseline',
                                       'alternative', 'metric')}
                    for h in spec['hypotheses']],
        methods=methods))


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


def selection_seeds(spec: dict, name: str) -> Optional[List[int]]:
    """The seeds that selected a method's lr (None: not recorded)."""
    m = spec['methods'][name]
    if 'lr_from' in m:
        return selection_seeds(spec, m['lr_from'])
    if 'lrs' in m:
        return [spec['select_seed']]
    on = m.get('selected_on')
    return None if on is None else sorted(on.get('seeds', []))


def seed_overlap(spec: dict, methods: Sequence[str]) -> Dict[str, List[int]]:
    """``{method: test seeds that also selected its lr}``, overlaps only."""
    out = {}
    for name in methods:
        both = sorted(set(selection_seeds(spec, name) or [])
                      & set(spec['seeds']))
        if both:
            out[name] = both
    return out


def selection_note(spec: dict, name: str) -> str:
    """How a method's learning rate was chosen, in words."""
    m = spec['methods'][name]
    if 'lr_from' in m:
        return (f"the lr of `{m['lr_from']}` "
                f"({selection_note(spec, m['lr_from'])})")
    if 'lrs' in m:
        grid = ', '.join(f'{lr:g}' for lr in m['lrs'])
        return (f'best val AP50 of the grid {{{grid}}}, seed '
                f"{spec['select_seed']}, in this study")
    on = m.get('selected_on')
    if not on:
        return 'declared in the spec (no selection record)'
    seeds = on.get('seeds', [])
    text = ('declared in the spec; selected on val in '
            f"`{on.get('study', '?')}` with seed{'s' if len(seeds) != 1 else ''} "
            f"{', '.join(map(str, seeds)) or '?'}")
    return text + (f"; {on['note']}" if on.get('note') else '')


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec='seconds')


def _file_sha256(path: str) -> str:
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_preregistration(spec: dict, out_dir: str,
                         required: Optional[bool] = None) -> Optional[dict]:
    """The study's frozen pre-registration, or None where there is none.

    ``required`` (default: the spec's ``preregistered``) makes a missing
    file an error. A file whose settings do not match its own hash was
    edited by hand: an error too.
    """
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
    """Raises unless the spec's settings (and the selected lrs) are the
    frozen ones; the message names each field and both values."""
    diffs = settings_differences(record['settings'],
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
    """Writes the pre-registration (``--freeze``): hypotheses, test seeds,
    selected settings, date and settings hash, before any test run.

    Refuses when a declared method has no selected lr yet, when a declared
    method already has a test result on a test seed, and when another
    freeze of the study exists with other settings. Freezing the same
    settings again leaves the file (and its date) as it is.
    """
    results = collect_results(spec, work_dir)
    chosen = selected_lrs(spec, results)
    declared = declared_methods(spec)
    missing = [m for m in declared if m not in chosen]
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
    settings = study_settings(spec, chosen)
    digest = settings_hash(settings)
    json_path, md_path = preregistration_paths(spec, out_dir)
    paths = dict(json=json_path, md=md_path)
    if osp.isfile(json_path):
        old = read_preregistration(spec, out_dir, required=True)
        if old['settings_sha256'] == digest:
            print(f'[study] {spec["name"]} is frozen already '
                  f'({old["frozen_at"]}, {json_path}); unchanged', flush=True)
            return paths
        raise PreregistrationError(
            f'{json_path} froze other settings on {old["frozen_at"]}: '
            + '; '.join(settings_differences(old['settings'], settings)) +
            '. A study is frozen once; a changed study is a new study (a '
            'new name and a new freeze).')
    rel = osp.relpath(osp.abspath(find_spec(spec_path)), ROOT)
    record = dict(
        study=spec['name'], spec=rel, frozen_at=now or _now(),
        settings_sha256=digest, settings=settings,
        selection={m: dict(lr=chosen[m], how=selection_note(spec, m),
                           seeds=selection_seeds(spec, m))
                   for m in declared},
        seed_overlap=seed_overlap(spec, declared),
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
    m = len(st['hypotheses'])
    alpha = st['alpha']
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
           f"baseline over the test seeds. m = {m} comparison"
           f"{'s' if m != 1 else ''}, alpha = {alpha:g}: paired t-tests, "
           f'Holm-adjusted p-values; Bonferroni intervals at level '
           f'1 - {alpha:g}/{m} = {1 - alpha / m:.4g} (one-sided for a '
           'one-sided hypothesis).', '']
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
    md += ['', 'Config files at the freeze (SHA-256, informational: the '
           'settings freeze each config path, options and lr; an edit of a '
           'config file after the freeze is not refused, so compare these '
           'with the files the runs used):', '']
    md += [f'- `{path}`: `{digest[:16]}`'
           for path, digest in sorted(record['config_sha256'].items())]
    overlap = record['seed_overlap']
    md += ['']
    if overlap:
        md.append('**Selection and test seeds overlap:** ' + '; '.join(
            f'`{k}`: seed {", ".join(map(str, v))}' for k, v in
            overlap.items()) + ' selected the lr and is also a test seed.')
    else:
        md.append('Selection and test seeds are disjoint: no test seed took '
                  'part in choosing a learning rate.')
    return '\n'.join(md) + '\n'


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
    record = read_preregistration(spec, out_dir, required=False)
    check_reportable(spec, results, chosen, per_method, record)
    # undeclared rows of a frozen study: labelled so in the table and plot
    declared = declared_methods(spec) if record else list(spec['methods'])
    exploratory = [m for m in spec['methods'] if m not in declared]
    comparisons = study_comparisons(spec, per_method, record)
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
    split = spec['test_split']
    md += [f'Machine: {"; ".join(machines) or "-"}. AP50 in %, VOCMetric '
           '(11 points). Test seeds: ' + ', '.join(map(str, spec['seeds'])) +
           (f'; test split `{split}`' if split != 'test' else '') +
           f'; learning rates selected on val with seed '
           f'{spec["select_seed"]}' + (
               ' (methods with a grid)' if any(
                   'lr' in m for m in spec['methods'].values()) else '') +
           '.', '', seeds_sentence(spec, [m for m in per_method
                                          if per_method[m]] or list(chosen)),
           '']
    if record is not None or any(per_method.values()):
        md += [preregistration_sentence(spec, record), '']
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
    earlier = [(mname, m) for mname, m in spec['methods'].items()
               if 'lr' in m]
    for mname, m in earlier:  # chosen before this study: say where
        on = m.get('selected_on') or {}
        where = (f" in `{on['study']}`" if on.get('study') else '') + (
            f" with seed{'s' if len(on.get('seeds', [])) > 1 else ''} "
            f"{', '.join(map(str, on['seeds']))}" if on.get('seeds') else '')
        note = f"; {on['note']}" if on.get('note') else ''
        md.append(f'- {m["label"]} (`{mname}`): lr {m["lr"]:g}, selected on '
                  f'val before this study{where}{note}')
    md += ['', '## Test AP50 at the selected learning rate', '']
    table = []
    by_pair = {(c['method'], c['baseline']): c for c in comparisons}
    # each row against its hypothesis' baseline (frozen), else the spec's
    hyps = record['settings']['hypotheses'] if record else []
    row_base = {h['method']: h['baseline'] for h in reversed(hyps)}
    baselines = {spec['baseline']} | {h['baseline'] for h in hyps}
    for mname, values in per_method.items():
        if not values:
            continue
        mean, std = mean_std(list(values.values()))
        bname = row_base.get(mname, spec['baseline'])
        diff = paired_difference(values, per_method.get(bname, {}))
        diff_text = '-' if (mname in baselines and mname not in row_base
                            ) or diff is None else (
            f'{100 * diff["mean"]:+.1f} [{100 * diff["low"]:+.1f}, '
            f'{100 * diff["high"]:+.1f}]')
        comp = by_pair.get((mname, bname), {})
        bonf_text = interval_text(comp) if 'p' in comp else '-'
        runs = [results[(mname, chosen[mname], s)] for s in values]
        # a run resumed after an attempt of unknown length: time unknown
        times = [r['train_seconds'] for r in runs
                 if not r.get('train_seconds_partial')] or [float('nan')]
        label = spec['methods'][mname]['label']
        if mname in exploratory:
            label += ' *(exploratory)*'
        table.append(
            f'| {label} | {chosen[mname]:g} | '
            f'{len(values)} | {100 * mean:.1f} ± {_pct(std)} | '
            + ', '.join(f'{100 * values[s]:.1f}' for s in sorted(values)) +
            f' | {diff_text} | {bonf_text} | {mean_std(times)[0]:.0f} |')
    if table:
        md += ['| method | lr | seeds | test AP50 mean ± std | per seed | '
               + ('paired diff. to its hypothesis\' baseline'
                  if len(baselines) > 1 else
                  f'paired diff. to {spec["baseline"]}') + ' [95 % CI] | '
               'Bonferroni CI (see below) | train time (s) |',
               '|---|---|---|---|---|---|---|---|'] + table
        md += [''] + comparisons_markdown(spec, comparisons)
        paths['comparisons'] = osp.join(out_dir, f'{name}_comparisons.csv')
        write_comparisons_csv(spec, comparisons, paths['comparisons'])
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
    if plot_curves(spec, results, chosen, paths['png'], exploratory):
        md += ['', f'![val AP50 per epoch]({osp.basename(paths["png"])})']
    with open(paths['md'], 'w', encoding='utf-8') as f:
        f.write('\n'.join(md) + '\n')
    return paths


def check_reportable(spec: dict, results: Dict[Tuple, dict],
                     chosen: Dict[str, float],
                     per_method: Dict[str, Dict[int, float]],
                     record: Optional[dict]) -> None:
    """Refuses a report the pre-registration does not allow: settings that
    differ from the frozen ones, a declared method's test run that started
    before the freeze (or under no freeze), test rows of a pre-registered
    study without its freeze file."""
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


def study_comparisons(spec: dict, per_method: Dict[str, Dict[int, float]],
                      record: Optional[dict]) -> List[dict]:
    """The study's comparisons with raw and corrected statistics.

    Frozen study: the pre-registered hypotheses are one family (m = their
    number, measured or not); every other method against the baseline is
    exploratory, a second family. Otherwise every method against the
    baseline, two-sided, is one exploratory family.
    """
    def pair(method, baseline):
        return paired_difference(per_method.get(method, {}),
                                 per_method.get(baseline, {}))

    out = []
    done = set()
    if record is not None:
        family = []
        for h in record['settings']['hypotheses']:
            family.append(dict(h, family='pre-registered',
                               diff=pair(h['method'], h['baseline'])))
            done.add((h['method'], h['baseline']))
        out += corrected_family(family, spec['alpha'])
    family = []
    declared = declared_methods(spec) if record is not None else []
    keys = [(mname, spec['baseline']) for mname in per_method
            if mname != spec['baseline'] and mname not in declared]
    keys += [(c['method'], c['baseline'])
             for c in spec.get('exploratory_comparisons', [])]
    for key in keys:
        if key in done:
            continue
        done.add(key)
        diff = pair(*key)
        if diff is not None:
            family.append(dict(id='-', method=key[0], baseline=key[1],
                               alternative='two-sided', family='exploratory',
                               diff=diff))
    if family:
        out += corrected_family(family, spec['alpha'])
    return out


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
        if family == 'pre-registered':
            md.append(f"Pre-registered family: m = {members[0]['m']} "
                      'hypotheses, frozen before the test runs.')
        else:
            md.append(f"Exploratory family: m = {members[0]['m']} "
                      'comparisons, not pre-registered (no confirmatory '
                      'claim).')
        md += ['', '| comparison | alternative | seeds | diff. | raw 95 % CI '
               '| Bonferroni CI | p (paired t) | Holm p | significant after '
               'Holm |', '|---|---|---|---|---|---|---|---|---|']
        labels = spec['methods']
        for c in members:
            name = (f"{c['id']}: " if c['id'] != '-' else '') + (
                f"{labels[c['method']]['label']} vs "
                f"{labels[c['baseline']]['label']}")
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
    return md[:-1]


def write_comparisons_csv(spec: dict, comparisons: List[dict],
                          path: str) -> None:
    """``<study>_comparisons.csv``: one row per comparison."""
    overlap = seed_overlap(spec, list(spec['methods']))
    with open(path, 'w', newline='', encoding='utf-8') as f:
        writer = csv.writer(f)
        writer.writerow(
            ['study', 'family', 'id', 'method', 'baseline', 'alternative',
             'n', 'seeds', 'mean_diff', 'ci95_low', 'ci95_high', 'm',
             'bonferroni_level', 'bonferroni_low', 'bonferroni_high', 'p',
             'p_holm', 'significant_holm', 'selection_test_seed_overlap'])
        for c in comparisons:
            d = c.get('diff')
            both = sorted(set(overlap.get(c['method'], [])) |
                          set(overlap.get(c['baseline'], [])))
            writer.writerow(
                [spec['name'], c['family'], c['id'], c['method'],
                 c['baseline'], c['alternative']] + (
                     ['', '', '', '', ''] if d is None else
                     [d['n'], ' '.join(map(str, d['seeds'])),
                      f"{d['mean']:.4f}", f"{c['low']:.4f}",
                      f"{c['high']:.4f}"]) +
                [c['m'], f"{c['bonf_level']:.6g}"] + (
                    ['', '', '', '', ''] if d is None else
                    [f"{c['bonf_low']:.4f}", f"{c['bonf_high']:.4f}",
                     f"{c['p']:.6g}", f"{c['p_holm']:.6g}",
                     c['significant']]) +
                [' '.join(map(str, both))])


def seeds_sentence(spec: dict, methods: Sequence[str]) -> str:
    """Whether the ``methods``' selection and test seeds overlap, in
    words."""
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
            f"`{record['settings_sha256'][:12]}`), hypotheses {ids}; every "
            'pre-registered test run started after the freeze. Rows marked '
            'exploratory were not declared.')


def _fmt(value, digits: int) -> str:
    return '' if value is None else f'{value:.{digits}f}'


def _pct(value: float) -> str:
    return '-' if value != value else f'{100 * value:.1f}'


def plot_curves(spec: dict, results: Dict[Tuple, dict],
                chosen: Dict[str, float], path: str,
                exploratory: Sequence[str] = ()) -> bool:
    """Val AP50 per epoch, mean and min-max band over the seeds; the
    ``exploratory`` methods (not pre-registered) dashed and so labelled."""
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
        label = f'{spec["methods"][mname]["label"]} (lr {chosen[mname]:g}, ' \
            f'{arr.shape[0]} seeds)'
        if mname in exploratory:
            label += ', exploratory'
        run_logs.plot_mean_band(ax, arr, label, colours[i % 20],
                                markers[i % 10],
                                linestyle='--' if mname in exploratory
                                else '-')
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
    """Writes the data set, the test split and each ``prepare`` file that
    is missing, with the spec's commands."""
    for item in spec.get('prepare', []):
        if not osp.isfile(osp.join(ROOT, item['path'])):
            print(f"[study] writing {item['path']}", flush=True)
            subprocess.run([sys.executable] + list(item['make']), cwd=ROOT,
                           check=True)
    data = spec.get('data')
    if not data:
        return
    root = osp.join(ROOT, data['root'])
    main = osp.join(root, 'VOC2007', 'ImageSets', 'Main')
    if not osp.isfile(osp.join(main, 'test.txt')):
        print(f'[study] writing the data set to {root}', flush=True)
        subprocess.run([sys.executable] + [a.format(root=root)
                                           for a in data['make']],
                       cwd=ROOT, check=True)
    split = spec.get('test_split', 'test')
    if not osp.isfile(osp.join(main, f'{split}.txt')):
        if 'make_test' not in data:
            raise FileNotFoundError(
                f'{main}/{split}.txt not found and the spec\'s data has no '
                'make_test command to write it')
        print(f'[study] writing the test split {split} to {root}',
              flush=True)
        subprocess.run([sys.executable] + [a.format(root=root)
                                           for a in data['make_test']],
                       cwd=ROOT, check=True)


def run_plan(spec: dict, plan: List[Tuple], evaluate_test: bool,
             work_dir: str, jobs: int, phase: str,
             preregistration: Optional[str] = None,
             records: Optional[str] = None) -> None:
    """The runs of ``plan`` not finished yet (``experiments.runner``)."""
    results = collect_results(spec, work_dir, records)
    needed = 'test_ap50' if evaluate_test else 'val_ap50'

    def describe(item, res):
        method, lr, seed = item
        test = (f', test AP50 {100 * res["test_ap50"]:.1f}'
                if 'test_ap50' in res else '')
        return (f'{method} lr={lr:g} seed={seed}: val AP50 '
                f'{100 * res["val_ap50"]:.1f}{test}')

    runner.run_plan(
        plan, lambda item: execute_run(spec, *item, evaluate_test, work_dir,
                                       preregistration, records),
        lambda item: needed in results.get(item, {}), describe, jobs,
        header=f'[study] {spec["name"]} {phase}', prefix=f'[study] {phase} ')


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('spec', help='study spec (experiments/studies/*.py)')
    parser.add_argument('--phase', choices=('select', 'test', 'all'),
                        default='all')
    parser.add_argument('--jobs', type=int, default=1)
    parser.add_argument('--work-dir', default='work_dirs/studies')
    parser.add_argument('--out-dir', default='docs/evidence')
    parser.add_argument('--records-dir',
                        help='where each run\'s result is also kept, so that '
                        'the study resumes without its work directories '
                        '(default: <out-dir>/runs)')
    parser.add_argument('--methods', nargs='+',
                        help='only these methods (default: all)')
    parser.add_argument('--dry-run', action='store_true',
                        help='print the runs that would be started and '
                        'write no report')
    parser.add_argument('--report-only', action='store_true',
                        help='write the report from finished runs only')
    parser.add_argument('--freeze', action='store_true',
                        help='write the pre-registration (hypotheses, test '
                        'seeds, selected settings, date, settings hash) to '
                        '<out-dir>/<study>_preregistration.json and .md; '
                        'run nothing')
    parser.add_argument('--exploratory', action='store_true',
                        help='in a frozen study, also test methods that no '
                        'hypothesis declares (the report labels them '
                        'exploratory)')
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


def test_methods(spec: dict, record: dict,
                 requested: Optional[Sequence[str]],
                 exploratory: bool) -> List[str]:
    """The methods a frozen study tests: the declared ones by default;
    an undeclared one only with ``--exploratory``."""
    declared = declared_methods(spec)
    if requested is None:
        return declared
    undeclared = [m for m in requested if m not in declared]
    if undeclared and not exploratory:
        raise PreregistrationError(
            f'{undeclared} are not declared in the pre-registration '
            f"{record['path']} (declared: {declared}): their test runs would "
            'be exploratory; pass --exploratory to run them anyway (the '
            'report labels them exploratory)')
    return list(requested)


def main(argv=None) -> Dict[str, str]:
    args = parse_args(argv)
    spec = load_spec(args.spec)
    work_dir = osp.abspath(args.work_dir)
    methods = requested_methods(spec, args.methods)
    records = args.records_dir or osp.join(args.out_dir, 'runs')
    if args.freeze:
        return freeze(spec, args.spec, work_dir, args.out_dir,
                      records=records)
    # a method with lr_from needs that method's grid
    grid_methods = sorted(
        {spec['methods'][m].get('lr_from', m) for m in methods},
        key=list(spec['methods']).index)
    if not args.report_only:
        if not args.dry_run:  # a dry run writes nothing
            ensure_data(spec)
        if args.phase in ('select', 'all'):
            plan = select_plan(spec, grid_methods)
            if args.dry_run:
                print('\n'.join(map(str, plan)))
            else:
                run_plan(spec, plan, False, work_dir, args.jobs, 'select',
                         records=records)
        if args.phase in ('test', 'all'):
            chosen = selected_lrs(spec,
                                  collect_results(spec, work_dir, records))
            record = read_preregistration(spec, args.out_dir)
            if record is not None:
                check_preregistration(spec, chosen, record)
                methods = test_methods(spec, record, args.methods,
                                       args.exploratory)
            if args.dry_run:
                try:
                    plan = test_plan(spec, methods, chosen)
                except RuntimeError as error:  # the selection is not run
                    print(f'[study] test runs follow the selection: {error}')
                else:
                    print('\n'.join(map(str, plan)))
            else:
                plan = test_plan(spec, methods, chosen)
                run_plan(spec, plan, True, work_dir, args.jobs, 'test',
                         record and record['settings_sha256'], records)
    if args.dry_run:  # prints the plan, writes nothing
        return {}
    paths = write_report(spec, collect_results(spec, work_dir, records),
                         args.out_dir)
    print(f'[study] report: {paths["md"]}, {paths["csv"]}', flush=True)
    return paths


if __name__ == '__main__':
    main()
