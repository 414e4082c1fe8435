#!/usr/bin/env python
"""Trains and evaluates Faster R-CNN with RaMBO and with CE on the toy VOC.

    python tools/quickstart.py [--work-dir work_dirs/quickstart]
        [--data-root data/toy_voc/VOCdevkit]
        [--losses ce rambo [ap-sigmoid ap-sodeep]]
        [--num-trainval 256] [--num-test 64] [--cfg-options KEY=VALUE ...]

Steps, all through MMDetection's runner and this repository's tools:

1. write the embedded dataset (``tools/make_toy_voc.py``, deterministic);
2. evaluate an untrained model (random initialisation, the CE config's seed)
   with ``tools/test.py``, as the floor the trained models must clear;
3. for each loss, train its quickstart config with ``tools/train.py`` and
   evaluate the last checkpoint with ``tools/test.py`` (``VOCMetric``, AP50
   with 11-point interpolation, on the toy VOC2007 test split);
   (``ap-sigmoid`` and ``ap-sodeep`` are the RaMBO config with the other
   two ranking back-ends, set by ``--cfg-options``: ``LOSS_OPTIONS``);
4. print a markdown table (model, loss, AP50, training time, machine) and
   save it to ``<work-dir>/results.md`` (numbers also in ``results.json``).

After every run a progress line gives the runs done, the time spent and an
ETA (from the runs of each kind measured so far; before the first training
run, one is taken to cost ``TRAIN_WEIGHT`` evaluations); within a run, MMEngine's logger writes the run's own ETA to its log
(``<work-dir>/<loss>_train.log``, e.g. ``tail -f`` it).

Each run is a subprocess with its own work directory under ``--work-dir``.
``--cfg-options`` is passed to every run (e.g. ``train_cfg.max_epochs=1`` for
a smoke test).
"""
import argparse
import json
import os
import os.path as osp
import sys
import time
from typing import Dict, List, Optional

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
sys.path.insert(0, ROOT)
from mmdet_rankloss.utils.run_logs import (last_record,  # noqa: E402
                                           machine_name, run_logged)

_RAMBO = 'configs/quickstart/faster-rcnn_r18-w32_fpn_rambo_toyvoc.py'
CONFIGS = {
    'ce': 'configs/quickstart/faster-rcnn_r18-w32_fpn_ce_toyvoc.py',
    'rambo': _RAMBO,
    'ap-sigmoid': _RAMBO,
    'ap-sodeep': _RAMBO,
}
# The other ranking back-ends of the AP loss, on the RaMBO config: only the
# ranker differs (the configs/rankers/ VOC configs make the same change).
_RANKER = 'model.roi_head.bbox_head.loss_cls.ranker.'
LOSS_OPTIONS = {
    'ap-sigmoid': [_RANKER + 'type=SigmoidRanker', _RANKER + 'temperature=0.1'],
    'ap-sodeep': [
        _RANKER + 'type=SorterRanker',
        _RANKER + 'sorter.type=HandcraftedSorter',
        _RANKER + 'sorter.seq_len=100', _RANKER + 'sorter.lambda_val=10.0'
    ],
}
LOSS_NAMES = {
    'ce': 'cross-entropy',
    'rambo': 'RaMBO AP loss',
    'ap-sigmoid': 'AP loss, sigmoid soft-rank ranker (SRT, t = 0.1)',
    'ap-sodeep': 'AP loss, SoDeep handcrafted-sorter ranker',
}
MODEL_NAME = 'Faster R-CNN, ResNet-18 (32 base channels) FPN, from scratch'
# 8-epoch training took 350 s and a test run about 30 s on the 2-core VM
TRAIN_WEIGHT = 10


def clock(seconds: float) -> str:
    """``h:mm:ss`` or ``mm:ss``."""
    minutes, sec = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return (f'{hours}:{minutes:02d}:{sec:02d}' if hours else
            f'{minutes:02d}:{sec:02d}')


class Progress:
    """Prints ``k/n <what> ... elapsed, ETA`` after each run.

    Args:
        kinds (list[str]): ``'train'`` or ``'test'`` for each planned run.
    """

    def __init__(self, kinds: List[str]) -> None:
        self.kinds, self.done, self.start = list(kinds), 0, time.time()
        self.seconds = dict(train=[], test=[])

    def step(self, what: str, seconds: float) -> None:
        self.seconds[self.kinds[self.done]].append(seconds)
        self.done += 1
        mean = {k: sum(v) / len(v) for k, v in self.seconds.items() if v}
        mean.setdefault('train', mean.get('test', 0) * TRAIN_WEIGHT)
        mean.setdefault('test', mean['train'] / TRAIN_WEIGHT)
        left = sum(mean[kind] for kind in self.kinds[self.done:])
        print(f'[quickstart] {self.done}/{len(self.kinds)} {what} done in '
              f'{seconds:.0f} s; elapsed {clock(time.time() - self.start)}, '
              f'ETA {clock(left)}', flush=True)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--work-dir', default='work_dirs/quickstart')
    parser.add_argument('--data-root', default='data/toy_voc/VOCdevkit')
    parser.add_argument(
        '--losses', nargs='+', default=['ce', 'rambo'], choices=CONFIGS)
    parser.add_argument('--num-trainval', type=int, default=256)
    parser.add_argument('--num-test', type=int, default=64)
    parser.add_argument(
        '--skip-untrained', action='store_true',
        help='do not evaluate the untrained model')
    parser.add_argument(
        '--cfg-options', nargs='+', default=[],
        help='KEY=VALUE overrides passed to every training and test run')
    return parser.parse_args(argv)


def data_options(data_root: str) -> List[str]:
    """``--cfg-options`` pointing the quickstart configs at ``data_root``."""
    root = osp.abspath(data_root).rstrip('/') + '/'
    return [
        f'{split}_dataloader.dataset.data_root={root}'
        for split in ('train', 'val', 'test')
    ]


def read_ap50(work_dir: str) -> float:
    """Returns the last ``pascal_voc/AP50`` an MMEngine run logged in JSON."""
    record = last_record(work_dir, 'pascal_voc/AP50')
    if record is None:
        raise RuntimeError(f'no pascal_voc/AP50 logged under {work_dir}')
    return float(record['pascal_voc/AP50'])


def run(cmd: List[str], log_path: str) -> float:
    """Runs ``cmd`` from the repository root, logs it, returns seconds."""
    return run_logged(cmd, log_path, cwd=ROOT, append=False, echo=True)


def write_untrained_checkpoint(config: str, path: str,
                               options: List[str]) -> None:
    """Saves the randomly initialised model of ``config`` (its seed)."""
    from mmengine.config import Config, DictAction
    from mmengine.logging import MMLogger
    from mmengine.registry import init_default_scope
    from mmengine.runner import set_random_seed

    # Keep the per-parameter initialisation report out of the console.
    MMLogger.get_instance('quickstart_untrained', log_level='WARNING')

    cfg = Config.fromfile(config)
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


def format_table(rows: List[Dict], machine: str) -> str:
    lines = [
        '| model | loss | AP50 (%) | train time (s) | machine |',
        '|---|---|---|---|---|',
    ]
    for row in rows:
        seconds = ('-' if row['train_seconds'] is None else
                   f'{row["train_seconds"]:.0f}')
        lines.append(f'| {row["model"]} | {row["loss"]} | '
                     f'{100 * row["ap50"]:.1f} | {seconds} | {machine} |')
    return '\n'.join(lines) + '\n'


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    from mmdet_rankloss.utils.toy_voc import make_toy_voc

    load_start = os.getloadavg()[0]
    work_dir = osp.abspath(args.work_dir)
    os.makedirs(work_dir, exist_ok=True)
    stats = make_toy_voc(
        args.data_root,
        num_trainval=args.num_trainval,
        num_test=args.num_test)
    print(f'toy VOC written to {args.data_root}: {stats}', flush=True)
    options = data_options(args.data_root) + list(args.cfg_options)
    python = sys.executable
    rows = []
    progress = Progress(([] if args.skip_untrained else ['test']) +
                        ['train', 'test'] * len(args.losses))

    if not args.skip_untrained:
        run_dir = osp.join(work_dir, 'untrained')
        os.makedirs(run_dir, exist_ok=True)
        ckpt = osp.join(run_dir, 'untrained.pth')
        write_untrained_checkpoint(
            osp.join(ROOT, CONFIGS['ce']), ckpt, options)
        seconds = run([
            python, 'tools/test.py', CONFIGS['ce'], ckpt, '--work-dir',
            run_dir, '--cfg-options'
        ] + options, osp.join(run_dir, 'test.log'))
        progress.step('untrained model evaluated', seconds)
        rows.append(
            dict(
                model=MODEL_NAME,
                loss='none (untrained, random init)',
                ap50=read_ap50(run_dir),
                train_seconds=None))

    for loss in args.losses:
        run_dir = osp.join(work_dir, loss)
        loss_options = options + LOSS_OPTIONS.get(loss, [])
        seconds = run([
            python, 'tools/train.py', CONFIGS[loss], '--work-dir', run_dir,
            '--cfg-options'
        ] + loss_options, run_dir + '_train.log')
        progress.step(f'{loss} trained', seconds)
        with open(osp.join(run_dir, 'last_checkpoint'), encoding='utf-8') as f:
            ckpt = f.read().strip()
        test_dir = osp.join(run_dir, 'test')
        progress.step(f'{loss} evaluated', run([
            python, 'tools/test.py', CONFIGS[loss], ckpt, '--work-dir',
            test_dir, '--cfg-options'
        ] + loss_options, run_dir + '_test.log'))
        rows.append(
            dict(
                model=MODEL_NAME,
                loss=LOSS_NAMES[loss],
                ap50=read_ap50(test_dir),
                train_seconds=seconds))

    machine = machine_name()
    table = format_table(rows, machine)
    note = (f'\nToy VOC test split ({args.num_test} images), VOCMetric AP50 '
            'with 11-point interpolation. Train time: wall-clock seconds of '
            'the training run, including start-up and the final evaluation. '
            f'Load average (1 min) at start / end: {load_start:.1f} / '
            f'{os.getloadavg()[0]:.1f}.\n')
    with open(osp.join(work_dir, 'results.md'), 'w', encoding='utf-8') as f:
        f.write(table + note)
    with open(osp.join(work_dir, 'results.json'), 'w', encoding='utf-8') as f:
        json.dump(dict(machine=machine, rows=rows), f, indent=2)
    print('\n' + table + note)
    print(f'results written to {osp.join(work_dir, "results.md")} and '
          f'results.json; runs and logs under {work_dir}', flush=True)


if __name__ == '__main__':
    main()
