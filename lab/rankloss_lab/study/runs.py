"""The runs of a study: one run (``tools/train.py``, then ``tools/test.py``
on val and test, scored for calibration), resumable from its work
directory or its record; a plan of runs; the data and files they need."""
import math
import os
import os.path as osp
import re
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

from mmdet_rankloss.evaluation.voc_files import (load_detections,
                                                 load_voc_ground_truth)
from rankloss_lab import run_logs, runner
from rankloss_lab.run_logs import machine_name
from rankloss_lab.runner import last_checkpoint, read_json, run_dir, write_json
from rankloss_lab.thresholds import resolve as resolve_score_thr
from .common import (METRIC, ROOT, THRESHOLDS, _now, collect_results, is_coco,
                     record_path, run_config, study_metrics, threshold_metric)
from .detections import detections_path, rescore_voc_ap50, save_detections
from .selection import selected_lrs
from .spec import load_spec


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
    """Image ids and boxes of a VOC2007 split (default: DigitsVOC's)."""
    from rankloss_lab.datasets.digits_voc import DIGIT_CLASSES
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

    def at(s):
        return {str(t): v for t, v in precision_recall_at(
            s, is_tp, num_gt, THRESHOLDS).items()}

    return dict(platt=[a, b], ece=expected_calibration_error(scores, is_tp),
                ece_platt=expected_calibration_error(fixed, is_tp),
                at=at(scores), at_platt=at(fixed))


def _olrp(dets: Sequence[dict], gts: Sequence[dict], num_classes: int) -> dict:
    """moLRP and its components, as ``LRPMetric`` computes them."""
    from mmdet_rankloss.evaluation.class_thresholds import (
        class_matches, lrp_optimal_thresholds)
    per_class = [r for r in lrp_optimal_thresholds(class_matches(
        dets, gts, num_classes)) if r is not None]
    out = {}
    for key in ('oLRP', 'oLRP_loc', 'oLRP_FP', 'oLRP_FN'):
        values = [r[key] for r in per_class if r[key] == r[key]]  # not NaN
        out[key] = sum(values) / len(values) if values else float('nan')
    return out


def olrp_on_test(data_root: str, test_pkl: str, test_split: str = 'test'
                 ) -> dict:
    """:func:`_olrp` on a VOC test split's XML ground truth."""
    from rankloss_lab.datasets.digits_voc import DIGIT_CLASSES
    ids, gts = load_ground_truth(data_root, test_split)
    dets = load_detections(test_pkl)
    return _olrp([dets[i] for i in ids], gts, len(DIGIT_CLASSES))


def olrp_on_dataset(config: str, options: Sequence[str],
                    test_pkl: str) -> dict:
    """moLRP and its components on the dataset of the ``test_dataloader``
    of ``config`` with a run's ``--cfg-options`` (a CocoMetric study's COCO
    json, read by MMDetection's own dataset class)."""
    from rankloss_lab.held_out import split_ground_truth
    cfg = run_config(config, options)
    dataset = cfg.test_dataloader.dataset
    # the runs' tools read data_root from the checkout's root
    if dataset.get('data_root') and not osp.isabs(dataset.data_root):
        dataset.data_root = osp.join(ROOT, dataset.data_root)
    dets, gts, _, classes = split_ground_truth(
        cfg, config, 'test_dataloader', test_pkl, held_out=False)
    return _olrp(dets, gts, len(classes))


ATTEMPTS = 'attempts.json'


def start_attempt(directory: str, resume: Optional[str] = None) -> List[dict]:
    """Notes a training attempt's start (and the modification time of the
    checkpoint ``resume`` it resumes from) in the run's folder; returns all
    attempts so far."""
    path = osp.join(directory, ATTEMPTS)
    attempts = read_json(path) or []
    resumed_from = (osp.getmtime(resume) if resume and osp.isfile(resume)
                    else None)
    attempts.append(dict(started=time.time(), resumed_from=resumed_from))
    write_json(path, attempts)
    return attempts


def earlier_attempts_seconds(attempts: Sequence[dict]) -> float:
    """Train time of every attempt but the last: from its start to the
    checkpoint the next attempt resumed from."""
    total = 0.0
    for before, after in zip(attempts, attempts[1:]):
        if after.get('resumed_from') is not None:
            total += max(0.0, after['resumed_from'] - before['started'])
    return total


def resume_checkpoint(directory: str, config: str,
                      metric: str = METRIC) -> Optional[str]:
    """The checkpoint a stopped run resumes from: the last, or the one before
    where the last epoch's val was due and not logged (the epoch is trained
    again and validated); None to start anew (none, or epoch 1's val lost).
    """
    last = last_checkpoint(directory)
    found = re.search(r'epoch_(\d+)\.pth$', last or '')
    epoch = int(found.group(1)) if found else None
    dumped = osp.join(directory, osp.basename(config))
    if (epoch is None or epoch in read_scalars(directory, metric)
            or not osp.isfile(dumped)):
        return last
    from mmengine.config import Config
    cfg = Config.fromfile(dumped).train_cfg
    if epoch % cfg.get('val_interval', 1) and epoch != cfg.max_epochs:
        return last  # no val due at this epoch
    if epoch == 1:
        return None
    before = osp.join(directory, f'epoch_{epoch - 1}.pth')
    return before if osp.isfile(before) else last


#: What a failed training's log says when its loss or scores went NaN or
#: inf (the rank losses raise on non-finite scores).
NON_FINITE = re.compile(r'non-finite|not finite|\bnan\b|\binf\b',
                        re.IGNORECASE)


def non_finite_reason(message: str) -> Optional[str]:
    """The last line (not a ``$`` command) of a failed command's log tail
    that names a non-finite value, or None: it failed for another reason."""
    tail = message.split('\n', 2)[-1] if message.startswith(
        'command failed') else message
    for line in reversed(tail.splitlines()):
        if not line.startswith('$ ') and NON_FINITE.search(line):
            return line.strip()[:300]
    return None


def non_finite_loss(final_train: dict) -> Optional[str]:
    """``'non-finite training loss (loss = nan)'`` where a logged loss of
    the last training record is NaN or inf, else None."""
    bad = [f'{k} = {v}' for k, v in sorted(final_train.items())
           if k.startswith('loss') and isinstance(v, (int, float))
           and not math.isfinite(v)]
    return f"non-finite training loss ({', '.join(bad)})" if bad else None


def execute_run(spec: dict, method: str, lr: float, seed: int,
                evaluate_test: bool, work_dir: str,
                preregistration: Optional[str] = None,
                records: Optional[str] = None) -> dict:
    """Trains (or resumes) one run, evaluates it; returns its result.

    ``val_ap50`` and the val curve are the spec's ``metric`` as the val loop
    logs it, ``test_ap50`` its test value; a CocoMetric study also records
    ``val_metrics`` and ``test_metrics`` and fits no calibration. The test
    records its start and the pre-registration hash it ran under. With
    ``records``, results are also written there, and a run whose record
    holds what is asked is not run again. A non-finite loss or score is a
    result: ``diverged`` (ranked last; a test run raises).
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
            if osp.isfile(detections_path(result_path)):
                shutil.copyfile(detections_path(result_path),
                                detections_path(path))
    python = sys.executable
    options = list(spec['options']) + list(m['options']) + [
        f'optim_wrapper.optimizer.lr={lr}', f'randomness.seed={seed}'
    ] + (list(spec.get('test_phase_options', [])) if evaluate_test else [])
    pretrained = spec.get('pretrained')
    if pretrained:
        options.append(f'load_from={pretrained_checkpoint(spec, work_dir)}')
    log_path = osp.join(directory, 'run.log')
    if 'val_ap50' not in result:
        cmd = [python, 'tools/train.py', m['config'], '--work-dir', directory]
        resume = resume_checkpoint(directory, m['config'], spec['metric'])
        if resume:
            cmd += ['--resume', resume]
        attempts = start_attempt(directory, resume)
        start = time.perf_counter()
        try:
            seconds = run_logged(cmd + ['--cfg-options'] + options, log_path)
            reason = None
        except RuntimeError as error:
            reason = non_finite_reason(str(error))
            if reason is None:  # failed for another reason: not a result
                raise
            seconds = time.perf_counter() - start
        curve = read_scalars(directory, spec['metric'])
        if not curve and reason is None:
            raise RuntimeError(f"{directory}: no {spec['metric']} logged")
        result = dict(study=spec['name'], method=method, lr=lr, seed=seed)
        if reason:
            result['diverged'] = reason
        result.update(
            train_seconds=earlier_attempts_seconds(attempts) + seconds,
            val_curve=[curve[k] for k in sorted(curve)],
            val_epochs=sorted(curve),
            val_ap50=None if reason else curve[max(curve)],
            final_train=last_train_record(directory), machine=machine_name())
        if reason is None:
            if is_coco(spec):
                result['val_metrics'] = _last_values(spec, directory)
            reason = non_finite_loss(result['final_train'])
            if reason:  # trained to the end on a loss gone NaN or inf
                result['diverged'] = reason
            if len(attempts) > 1:
                result['resumed'] = len(attempts) - 1
            if attempts[0]['resumed_from'] is not None:
                # resumed from an attempt that left no record of its start
                result['train_seconds_partial'] = True
        save(result)
    if result.get('val_ap50') is None:  # diverged before its last epoch
        if evaluate_test:
            raise RuntimeError(
                f"{directory}: the training diverged ({result['diverged']}): "
                'there is no trained model to test')
        return result
    if evaluate_test and 'test_ap50' not in result:
        ckpt = last_checkpoint(directory, required=True)
        result['test_started_at'] = _now()
        result['preregistration_sha256'] = preregistration
        start = time.perf_counter()
        pkls = {}
        test_split = spec.get('test_split', 'test')
        # a COCO study's val values are its last val loop's: test only
        for split in ('test',) if is_coco(spec) else ('val', 'test'):
            out_dir = osp.join(directory, f'eval_{split}')
            pkls[split] = osp.join(out_dir, 'detections.pkl')
            listed = test_split if split == 'test' else 'val'
            split_options = [] if listed == 'test' else [
                'test_dataloader.dataset.ann_file='
                f'VOC2007/ImageSets/Main/{listed}.txt']
            run_logged([
                python, 'tools/test.py', m['config'], ckpt, '--work-dir',
                out_dir, '--out', pkls[split], '--cfg-options'
            ] + options + split_options, log_path)
        test_ap = read_scalars(osp.join(directory, 'eval_test'),
                               spec['metric'])
        if not test_ap:
            raise RuntimeError(
                f"{directory}: tools/test.py logged no {spec['metric']}")
        result['test_ap50'] = test_ap[max(test_ap)]
        result['test_split'] = test_split
        result['test_score_thr'] = resolve_score_thr(spec, method)
        keep_test_detections(spec, result, pkls['test'], result_path)
        if is_coco(spec):
            result['test_metrics'] = _last_values(
                spec, osp.join(directory, 'eval_test'))
            result['test_lrp'] = olrp_on_dataset(m['config'], options,
                                                 pkls['test'])
        else:
            result['test_lrp'] = olrp_on_test(
                osp.join(ROOT, spec['data']['root']), pkls['test'],
                test_split)
        result['test_seconds'] = time.perf_counter() - start
        if 'val' in pkls:  # a COCO study has no val detections to fit on
            try:
                result['calibration'] = score_calibration(
                    osp.join(ROOT, spec['data']['root']), pkls['val'],
                    pkls['test'], test_split)
            except ValueError as err:  # e.g. no true positive on val
                result['calibration'] = dict(error=str(err))
        save(result)
    return result


def keep_test_detections(spec: dict, result: dict, pkl: str,
                         result_path: str) -> None:
    """Stores a test run's detections (``pkl``) beside ``result_path`` and,
    with ``score_thresholds``, AP50 re-scored at each in
    ``result['test_metrics']``; a model without a score threshold keeps none.
    """
    if result['test_score_thr'] is None:
        return
    split = result['test_split']
    root = None if is_coco(spec) else osp.join(ROOT, spec['data']['root'])
    stored = save_detections(
        pkl, detections_path(result_path), result['test_score_thr'],
        None if root is None else load_ground_truth(root, split)[0])
    if spec.get('score_thresholds'):
        result['test_metrics'] = {
            threshold_metric(spec['metric'], t): rescore_voc_ap50(
                stored, root, split, t) for t in spec['score_thresholds']}


def _last_values(spec: dict, directory: str) -> Dict[str, float]:
    """``{metric: last value logged in directory}`` of the spec's metrics."""
    out = {}
    for key in study_metrics(spec):
        values = read_scalars(directory, key)
        if not values:
            raise RuntimeError(f'{directory}: no {key} logged')
        out[key] = values[max(values)]
    return out


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


def _python(args: Sequence[str], what: str) -> None:
    print(f'[study] writing {what}', flush=True)
    subprocess.run([sys.executable] + list(args), cwd=ROOT, check=True)


def ensure_data(spec: dict) -> None:
    """Writes the missing data set, test split and ``prepare`` files."""
    for item in spec.get('prepare', []):
        if not osp.isfile(osp.join(ROOT, item['path'])):
            _python(item['make'], item['path'])
    data = spec.get('data')
    if not data:
        return
    root = osp.join(ROOT, data['root'])
    main = osp.join(root, 'VOC2007', 'ImageSets', 'Main')
    # a COCO study reads the COCO twin (make_digits_voc.py --masks)
    written = (osp.join(root, 'annotations', 'instances_test.json')
               if is_coco(spec) else osp.join(main, 'test.txt'))
    if not osp.isfile(written):
        _python([a.format(root=root) for a in data['make']],
                f'the data set to {root}')
    split = spec.get('test_split', 'test')
    if not osp.isfile(osp.join(main, f'{split}.txt')):
        if 'make_test' not in data:
            raise FileNotFoundError(
                f'{main}/{split}.txt not found and the spec\'s data has no '
                'make_test command to write it')
        _python([a.format(root=root) for a in data['make_test']],
                f'the test split {split} to {root}')


def check_test_thresholds(spec: dict, methods: Sequence[str]) -> None:
    """Refuses test runs whose test threshold is above the lowest of the
    spec's ``score_thresholds`` (no re-scoring there)."""
    if not spec.get('score_thresholds'):
        return
    low = min(spec['score_thresholds'])
    for method in methods:
        thr = resolve_score_thr(spec, method)
        if thr is None or thr > low:
            raise RuntimeError(
                f"{spec['name']}: {method} is tested at score_thr {thr} "
                f"({spec['methods'][method]['config']} with the study's "
                f'options), above the lowest of score_thresholds {low:g}: '
                'set it in options, e.g. '
                f"'model.test_cfg.rcnn.score_thr={low:g}' (Faster R-CNN) "
                f"or 'model.test_cfg.score_thr={low:g}'")


def run_plan(spec: dict, plan: List[Tuple], evaluate_test: bool, work_dir: str,
             jobs: int, phase: str, preregistration: Optional[str] = None,
             records: Optional[str] = None) -> None:
    """The runs of ``plan`` not finished yet (``rankloss_lab.runner``)."""
    if evaluate_test:
        check_test_thresholds(spec, sorted({item[0] for item in plan}))
    results = collect_results(spec, work_dir, records)
    needed = 'test_ap50' if evaluate_test else 'val_ap50'

    def describe(item, res):
        method, lr, seed = item
        if res.get('val_ap50') is None:
            return (f'{method} lr={lr:g} seed={seed}: diverged '
                    f"({res['diverged']})")
        test = (f', test AP50 {100 * res["test_ap50"]:.1f}'
                if 'test_ap50' in res else '')
        return (f'{method} lr={lr:g} seed={seed}: val AP50 '
                f'{100 * res["val_ap50"]:.1f}{test}')

    runner.run_plan(
        plan, lambda item: execute_run(spec, *item, evaluate_test, work_dir,
                                       preregistration, records),
        lambda item: needed in results.get(item, {}), describe, jobs,
        header=f'[study] {spec["name"]} {phase}', prefix=f'[study] {phase} ')
