#!/usr/bin/env python
"""Does a long run hold steady? Resident memory and step time per iteration.

    python -m rankloss_lab.analysis.long_run [--config CONFIG] [--iters 2000]
        [--data-root DIR] [--out result.json]

Trains the detection quickstart with the RaMBO AP loss (its score memory
full after 7 steps) for ``--iters`` iterations on the toy VOC through
MMEngine's Runner, records after every iteration the process's resident
set size (``/proc/self/statm``) and the wall time of the step, and fits
least-squares lines over the second half of the run (the first half holds
allocator warm-up and the learning-rate warm-up): to every iteration's
value, and to the medians of blocks of ``--block`` iterations, which the
allocator's per-step peaks (tens of MiB, freed within the step) do not
sway. A leak shows as a positive RSS slope; a growing memory or sort cost
as a positive step-time slope. Printed and written as JSON: the slopes
(MiB and ms per 1,000 iterations), start and end values and medians.
``--analyse OUT.json`` recomputes the summary of a saved run.
"""
import argparse
import json
import os
import os.path as osp
import time

import numpy as np
from rankloss_lab.paths import ROOT



def rss_mib() -> float:
    with open('/proc/self/statm') as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf('SC_PAGE_SIZE') / 2**20


def slope_per_1000(values, start: int, block: int = 1) -> float:
    """Least-squares slope per 1,000 iterations from ``start`` on, of the
    values or of the medians of consecutive blocks of ``block``."""
    y = np.asarray(values[start:], dtype=float)
    n = len(y) // block * block
    y = np.median(y[:n].reshape(-1, block), axis=1)
    x = start + block * np.arange(len(y)) + (block - 1) / 2
    return float(np.polyfit(x, y, 1)[0] * 1000)


def summarise(rss, step_ms, block: int) -> dict:
    half = len(rss) // 2
    return dict(
        iterations=len(rss),
        rss_mib_start=round(rss[0], 1),
        rss_mib_half=round(rss[half], 1),
        rss_mib_end=round(rss[-1], 1),
        rss_mib_max_second_half=round(max(rss[half:]), 1),
        rss_slope_mib_per_1000_iters=round(slope_per_1000(rss, half), 2),
        rss_block_median_slope_mib_per_1000_iters=round(
            slope_per_1000(rss, half, block), 2),
        step_ms_median_first_half=round(float(np.median(step_ms[:half])),
                                        1),
        step_ms_median_second_half=round(
            float(np.median(step_ms[half:])), 1),
        step_time_slope_ms_per_1000_iters=round(
            slope_per_1000(step_ms, half), 1),
        step_time_block_median_slope_ms_per_1000_iters=round(
            slope_per_1000(step_ms, half, block), 1),
        block=block)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument(
        '--config',
        default=osp.join(ROOT, 'configs', 'quickstart',
                         'faster-rcnn_r18-w32_fpn_rambo_toyvoc.py'))
    parser.add_argument('--iters', type=int, default=2000)
    parser.add_argument('--data-root', default='work_dirs/long_run/VOCdevkit')
    parser.add_argument('--work-dir', default='work_dirs/long_run')
    parser.add_argument('--num-trainval', type=int, default=64)
    parser.add_argument('--block', type=int, default=8)
    parser.add_argument('--out', default=None)
    parser.add_argument('--analyse', default=None,
                        help='summarise a saved --out file; no training')
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.analyse:
        with open(args.analyse) as f:
            saved = json.load(f)
        result = dict(
            config=saved.get('config'), threads=saved.get('threads'),
            **summarise(saved['rss_mib'], saved['step_ms'], args.block))
        print(json.dumps(result, indent=2))
        return result
    import mmdet_rankloss  # noqa: F401
    from mmengine.config import Config
    from mmengine.hooks import Hook
    from mmengine.runner import Runner

    from rankloss_lab.datasets.toy_voc import make_toy_voc
    if not osp.isdir(osp.join(args.data_root, 'VOC2007')):
        make_toy_voc(args.data_root, num_trainval=args.num_trainval,
                     num_test=4)
    cfg = Config.fromfile(args.config)
    cfg.work_dir = args.work_dir
    root = args.data_root.rstrip('/') + '/'
    cfg.train_dataloader.dataset.data_root = root
    cfg.val_dataloader.dataset.data_root = root
    cfg.test_dataloader.dataset.data_root = root
    # iterations, not epochs: no validation, no checkpoints in between
    per_epoch = args.num_trainval // cfg.train_dataloader.batch_size
    epochs = -(-args.iters // per_epoch)
    cfg.train_cfg = dict(type='EpochBasedTrainLoop', max_epochs=epochs,
                         val_interval=epochs + 1)
    cfg.val_cfg = cfg.val_dataloader = cfg.val_evaluator = None
    cfg.test_cfg = cfg.test_dataloader = cfg.test_evaluator = None
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=-1)
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=100)
    cfg.param_scheduler = cfg.param_scheduler[:1]  # warm-up only

    rss, step_ms = [], []

    class Probe(Hook):
        priority = 'LOWEST'

        def before_train_iter(self, runner, batch_idx, data_batch=None):
            self.t = time.perf_counter()

        def after_train_iter(self, runner, batch_idx, data_batch=None,
                             outputs=None):
            step_ms.append((time.perf_counter() - self.t) * 1000)
            rss.append(rss_mib())
            if len(rss) >= args.iters:
                runner.train_loop.stop_training = True

    runner = Runner.from_cfg(cfg)
    runner.register_hook(Probe())
    runner.train()

    result = dict(
        config=osp.relpath(args.config, ROOT),
        threads=os.environ.get('OMP_NUM_THREADS'),
        **summarise(rss, step_ms, args.block))
    print(json.dumps(result, indent=2))
    if args.out:
        with open(args.out, 'w') as f:
            json.dump(dict(result, rss_mib=rss, step_ms=step_ms), f)
    return result


if __name__ == '__main__':
    main()
