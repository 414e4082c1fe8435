#!/usr/bin/env python
"""Trains and evaluates Faster R-CNN with CE, RaMBO and RaMBO + CE on the toy
VOC.

    python tools/quickstart.py [--losses ce rambo rambo-bce ...] [--calibrate]

Writes ``<work-dir>/results.md`` and ``results.json``
(docs/get_started.md#quickstart); each run's log: ``<loss>_train.log``.
"""
import argparse
import contextlib
import json
import os
import os.path as osp
import sys
import threading
import time
import warnings
from typing import Dict, List, Optional

import numpy as np

from rankloss_lab.run_logs import (EpochWatcher, last_record, machine_name,
                                   run_logged)
from rankloss_lab.runner import (Progress, clock, last_checkpoint,
                                 markdown_table, run_each)

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))

_CONFIG = 'configs/quickstart/faster-rcnn_r18-w32_fpn_{}_toyvoc.py'
CONFIGS = {loss: _CONFIG.format(config) for loss, config in (
    ('ce', 'ce'), ('rambo', 'rambo'), ('rambo-bce', 'rambo-bce'),
    ('ap-sigmoid', 'rambo'), ('ap-sodeep', 'rambo'))}
# The AP loss's other rankers on the RaMBO config (as configs/rankers/)
_RANKER = 'model.roi_head.bbox_head.loss_cls.ranker.'
LOSS_OPTIONS = {
    'ap-sigmoid': [_RANKER + 'type=SigmoidRanker',
                   _RANKER + 'temperature=0.1'],
    'ap-sodeep': [_RANKER + o for o in (
        'type=SorterRanker', 'sorter.type=HandcraftedSorter',
        'sorter.seq_len=100', 'sorter.lambda_val=10.0')],
}
LOSS_NAMES = {
    'ce': 'cross-entropy',
    'rambo': 'RaMBO AP loss, margin 0, calibrated scores',
    'rambo-bce': 'RaMBO + sigmoid CE (MixedRankLoss)',
    'ap-sigmoid': 'AP loss, sigmoid soft-rank ranker (SRT, t = 0.1)',
    'ap-sodeep': 'AP loss, SoDeep handcrafted-sorter ranker',
}
MODEL_NAME = 'Faster R-CNN R18-w32 FPN, from scratch'
# 8-epoch training took 115 s and a test run about 10 s on the 2-core machine
TRAIN_WEIGHT = 10
# DetInferencer's default pred_score_thr: what a user sees in a picture
DISPLAY_THRESHOLD = 0.3
SMOKE_NOTE = ('One seed of 8 epochs on a toy set: a smoke test of the '
              'pipeline, not evidence of which loss is better (the DigitsVOC '
              'studies, docs/evidence.md, are).')


def make_progress(kinds: List[str], jobs: int = 1) -> Progress:
    """Progress of the planned runs, ``'train'`` or ``'test'`` each (a
    training run costs ``TRAIN_WEIGHT`` tests until one is measured)."""
    return Progress([TRAIN_WEIGHT if k == 'train' else 1 for k in kinds],
                    kinds, jobs, prefix='[quickstart] ')


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--work-dir', default='work_dirs/quickstart')
    parser.add_argument('--data-root', default='data/toy_voc/VOCdevkit')
    parser.add_argument('--losses', nargs='+', choices=CONFIGS,
                        default=['ce', 'rambo', 'rambo-bce'])
    parser.add_argument('--jobs', type=int, default=3, help='runs side by '
                        'side, one intra-op thread each (default: 3)')
    parser.add_argument('--num-trainval', type=int, default=256)
    parser.add_argument('--num-test', type=int, default=64)
    parser.add_argument('--num-val', type=int, default=64)
    parser.add_argument(
        '--calibrate', action='store_true',
        help="refit the RaMBO config's score calibration on the val split "
        'and write it into that config before testing')
    parser.add_argument('--skip-untrained', action='store_true',
                        help='do not evaluate the untrained model')
    parser.add_argument('--cfg-options', nargs='+', default=[],
                        help='KEY=VALUE overrides passed to every training '
                        'and test run')
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f'--jobs must be >= 1, got {args.jobs}')
    if args.calibrate and (args.num_val < 1 or 'rambo' not in args.losses):
        parser.error('--calibrate needs --num-val >= 1 and rambo in --losses')
    return args


def data_options(data_root: str) -> List[str]:
    """``--cfg-options`` pointing the quickstart configs at ``data_root``."""
    root = osp.abspath(data_root).rstrip('/') + '/'
    return [f'{split}_dataloader.dataset.data_root={root}'
            for split in ('train', 'val', 'test')]


def read_ap50(work_dir: str) -> float:
    """Returns the last ``pascal_voc/AP50`` an MMEngine run logged in JSON."""
    record = last_record(work_dir, 'pascal_voc/AP50')
    if record is None:
        raise RuntimeError(f'no pascal_voc/AP50 logged under {work_dir}')
    return float(record['pascal_voc/AP50'])


def run(cmd: List[str], log_path: str) -> float:
    """Runs ``cmd`` from the repository root, logs it, returns seconds."""
    return run_logged(cmd, log_path, cwd=ROOT, append=False)


def _tool(script: str, *args: str, options: List[str]) -> List[str]:
    """``python tools/<script> ARGS --cfg-options OPTIONS``."""
    return [sys.executable, f'tools/{script}', *args, '--cfg-options',
            *options]


# MMEngine resolves an ``mmdet::`` base with ``importlib.reload(
# pkg_resources)``: two threads loading such a config at once see two
# ``Distribution`` classes and one fails, so every load takes this lock.
_CONFIG_LOCK = threading.Lock()


def load_config(path: str):
    """``Config.fromfile(path)``, one thread at a time, without the
    ``pkg_resources`` deprecation warning."""
    from mmengine.config import Config
    with _CONFIG_LOCK, warnings.catch_warnings():
        warnings.filterwarnings('ignore', message='pkg_resources is '
                                'deprecated', category=UserWarning)
        return Config.fromfile(path)


#: The packages whose versions can change the quickstart's numbers.
PACKAGES = ('torch', 'numpy', 'pillow', 'opencv-python', 'mmcv', 'mmengine',
            'mmdet')


def package_versions() -> Dict[str, Optional[str]]:
    """``{package: installed version or None}`` of :data:`PACKAGES`."""
    from importlib import metadata
    out = dict.fromkeys(PACKAGES)
    for name in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            out[name] = metadata.version(name)
    return out


def tree_digest(root: str) -> str:
    """SHA-256 over the relative paths and bytes of every file under
    ``root``, in sorted order: two runs on the same data share it."""
    import hashlib
    digest = hashlib.sha256()
    for dirpath, dirnames, files in os.walk(root):
        dirnames.sort()
        for name in sorted(files):
            path = osp.join(dirpath, name)
            digest.update(osp.relpath(path, root).encode() + b'\0')
            with open(path, 'rb') as f:
                digest.update(f.read())
    return digest.hexdigest()


def _setting(config: str, options: List[str], key: str):
    """``key`` (dotted) of ``config`` as the ``KEY=VALUE`` ``options`` set
    it."""
    for option in options:
        if option.startswith(key + '='):
            return option.split('=', 1)[1]
    value = load_config(osp.join(ROOT, config))
    for part in key.split('.'):
        value = value[part]
    return value


def max_epochs(config: str, options: List[str]) -> int:
    """The training epochs of ``config`` with the ``options``."""
    return int(_setting(config, options, 'train_cfg.max_epochs'))


def write_untrained_checkpoint(config: str, path: str,
                               options: List[str]) -> None:
    """Saves the randomly initialised model of ``config`` (its seed)."""
    from mmengine.config import DictAction
    from mmengine.logging import MMLogger
    from mmengine.registry import init_default_scope
    from mmengine.runner import set_random_seed

    # no per-parameter initialisation report on the console
    MMLogger.get_instance('quickstart_untrained', log_level='WARNING')

    cfg = load_config(config)
    parser = argparse.ArgumentParser()
    parser.add_argument('--o', nargs='+', action=DictAction, default={})
    cfg.merge_from_dict(parser.parse_args(['--o'] + options).o)
    init_default_scope(cfg.get('default_scope', 'mmdet'))
    set_random_seed(cfg.get('randomness', {}).get('seed', 0))
    from mmdet.registry import MODELS
    model = MODELS.build(cfg.model)
    model.init_weights()
    import torch
    torch.save({'meta': {}, 'state_dict': model.state_dict()}, path)


def voc_classes():
    from mmdet.datasets import VOCDataset
    return VOCDataset.METAINFO['classes']


def objects_per_image(data_root: str, split: str) -> float:
    """Mean number of annotated objects (difficult ones included: a
    picture shows them) per image of ``split``."""
    from mmdet_rankloss.evaluation.voc_files import load_voc_ground_truth
    _, gts = load_voc_ground_truth(data_root, split, voc_classes())
    return float(np.mean([len(gt['labels']) for gt in gts]))


def boxes_per_image(detections_pkl: str,
                    threshold: float = DISPLAY_THRESHOLD) -> float:
    """Mean number of detections scoring at least ``threshold`` per image:
    the boxes ``DetInferencer`` draws at that ``pred_score_thr``."""
    from mmdet_rankloss.evaluation.voc_files import load_detections
    dets = load_detections(detections_pkl)
    return float(np.mean([(np.asarray(d['scores']) >= threshold).sum()
                          for d in dets.values()]))


def config_lr(config: str, options: List[str]) -> float:
    return float(_setting(config, options, 'optim_wrapper.optimizer.lr'))


def calibrate(config: str, ckpt: str, run_dir: str, options: List[str],
              data_root: str) -> float:
    """Fits the RaMBO config's calibration on the val split and writes it
    into ``config`` (``tools/test.py`` on val, then
    ``fit_score_calibration.py``, as a user would); returns the seconds."""
    val_dir = osp.join(run_dir, 'val')
    val_pkl = osp.join(val_dir, 'detections.pkl')
    log = osp.join(run_dir, 'val.log')
    seconds = run(_tool('test.py', config, ckpt, '--work-dir', val_dir,
                        '--out', val_pkl, options=options + [
                            'test_dataloader.dataset.ann_file='
                            'VOC2007/ImageSets/Main/val.txt']), log)
    seconds += run_logged([
        sys.executable, 'tools/analysis_tools/fit_score_calibration.py',
        val_pkl, '--data-root', osp.abspath(data_root), '--classes', 'voc',
        '--split', 'val', '--write-config', osp.join(ROOT, config)],
        log, cwd=ROOT, append=True)
    print(f'[quickstart] calibration fitted on val and written to {config} '
          f'(fit in {log})', flush=True)
    return seconds


def format_table(rows: List[Dict], machine: str) -> str:
    cells = []
    for row in rows:
        seconds = ('-' if row['train_seconds'] is None else
                   f'{row["train_seconds"]:.0f}')
        lr = '' if row['lr'] is None else f' ({row["lr"]:g})'
        boxes = row['boxes_per_image_at_0.3']
        boxes = '-' if boxes is None else (
            f'{boxes:.1f} ({row["objects_per_image"]:.1f})')
        cells.append([row['model'], f'{row["loss"]}{lr}',
                      f'{100 * row["ap50"]:.1f}', boxes, seconds, machine])
    return markdown_table(
        ['model', 'loss (lr)', 'AP50 (%)', 'boxes per image at score 0.3 '
         '(objects per image)', 'train time (s)', 'machine'], cells) + '\n'


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    from rankloss_lab.datasets.toy_voc import make_toy_voc

    load_start, start = os.getloadavg()[0], time.time()
    work_dir = osp.abspath(args.work_dir)
    os.makedirs(work_dir, exist_ok=True)
    stats = make_toy_voc(args.data_root, num_trainval=args.num_trainval,
                         num_test=args.num_test, num_val=args.num_val)
    print(f'toy VOC written to {args.data_root}: {stats}', flush=True)
    options = data_options(args.data_root) + list(args.cfg_options)
    objects = objects_per_image(args.data_root, 'test')
    kinds = ([] if args.skip_untrained else ['test'])
    for loss in args.losses:
        kinds += ['train'] + (['test'] if args.calibrate and loss == 'rambo'
                              else []) + ['test']
    progress = make_progress(kinds, jobs=min(args.jobs, len(args.losses)))

    def untrained() -> Dict:
        run_dir = osp.join(work_dir, 'untrained')
        os.makedirs(run_dir, exist_ok=True)
        ckpt = osp.join(run_dir, 'untrained.pth')
        write_untrained_checkpoint(osp.join(ROOT, CONFIGS['ce']), ckpt,
                                   options)
        seconds = run(_tool('test.py', CONFIGS['ce'], ckpt, '--work-dir',
                            run_dir, options=options),
                      osp.join(run_dir, 'test.log'))
        progress.step('untrained model evaluated', seconds, 'test')
        return dict(model=MODEL_NAME, loss='none (untrained, random init)',
                    config=None, lr=None, ap50=read_ap50(run_dir),
                    train_seconds=None, objects_per_image=objects,
                    **{'boxes_per_image_at_0.3': None})

    def train_and_test(loss: str) -> Dict:
        run_dir = osp.join(work_dir, loss)
        loss_options = options + LOSS_OPTIONS.get(loss, [])
        seconds = run(_tool('train.py', CONFIGS[loss], '--work-dir', run_dir,
                            options=loss_options), run_dir + '_train.log')
        progress.step(f'{loss} trained', seconds, 'train')
        ckpt = last_checkpoint(run_dir, required=True)
        if args.calibrate and loss == 'rambo':
            progress.step(
                'rambo calibrated on val',
                calibrate(CONFIGS[loss], ckpt, run_dir, loss_options,
                          args.data_root), 'test')
        test_dir = osp.join(run_dir, 'test')
        dets = osp.join(test_dir, 'detections.pkl')
        progress.step(f'{loss} evaluated', run(_tool(
            'test.py', CONFIGS[loss], ckpt, '--work-dir', test_dir, '--out',
            dets, options=loss_options), run_dir + '_test.log'), 'test')
        return dict(model=MODEL_NAME, loss=LOSS_NAMES[loss],
                    config=CONFIGS[loss],
                    lr=config_lr(CONFIGS[loss], loss_options),
                    ap50=read_ap50(test_dir), train_seconds=seconds,
                    objects_per_image=objects,
                    **{'boxes_per_image_at_0.3': boxes_per_image(dets)})

    # the trainings start first; the untrained model's row comes first
    runs = [lambda loss=loss: train_and_test(loss) for loss in args.losses]
    watched = {loss: (osp.join(work_dir, loss) + '_train.log',
                      max_epochs(CONFIGS[loss], options))
               for loss in args.losses}
    with EpochWatcher(watched, jobs=min(args.jobs, len(args.losses)),
                      prefix='[quickstart] '):
        rows = run_each(lambda run_one: run_one(),
                        runs + [untrained] * (not args.skip_untrained),
                        args.jobs)
    rows = rows[len(runs):] + rows[:len(runs)]

    machine = machine_name()
    total = time.time() - start
    table = format_table(rows, machine)
    note = (f'\nToy VOC test split ({args.num_test} images), VOCMetric AP50 '
            'with 11-point interpolation; boxes per image: detections '
            f'scoring at least {DISPLAY_THRESHOLD} (what DetInferencer draws '
            'by default). Train time: wall-clock seconds of the training run, '
            f'including start-up and the final evaluation, {args.jobs} runs '
            'side by side with one intra-op thread each. Whole command: '
            f'{clock(total)}. Load average (1 min) at start / end: '
            f'{load_start:.1f} / {os.getloadavg()[0]:.1f}.\n{SMOKE_NOTE}\n')
    with open(osp.join(work_dir, 'results.md'), 'w', encoding='utf-8') as f:
        f.write(table + note)
    with open(osp.join(work_dir, 'results.json'), 'w', encoding='utf-8') as f:
        json.dump(dict(machine=machine, date=time.strftime('%Y-%m-%d'),
                       total_seconds=round(total, 1), jobs=args.jobs,
                       load_average=[round(load_start, 1),
                                     round(os.getloadavg()[0], 1)],
                       packages=package_versions(),
                       data_sha256=tree_digest(args.data_root),
                       rows=rows), f, indent=2)
    print('\n' + table + note)
    print(f'results written to {osp.join(work_dir, "results.md")} and '
          f'results.json; runs and logs under {work_dir}', flush=True)


if __name__ == '__main__':
    main()
