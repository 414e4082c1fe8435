#!/usr/bin/env python
"""Trains every retrieval loss under the same conditions, writes a table.

Same model, data, schedule and seeds for every loss: the small ResNet-18 of
the digits quickstart config (``configs/retrieval/*_digits.py``) trained from
scratch on scikit-learn's digits 0-4 (nothing to download), then Recall@K
on the unseen digits 5-9 (query = gallery, self excluded) with the final
weights. Only ``model.loss`` changes between runs. For each loss the table
gives the mean and the spread (min-max over the seeds) of R@1 and R@K, and
the mean time of a training step (data loading, forward, loss, backward,
update) from MMEngine's ``IterTimerHook``.

Examples::

    python tools/compare_losses.py                       # all losses, 3 seeds
    python tools/compare_losses.py --losses fastap auc-bh --seeds 0 \\
        --epochs 5 --out work_dirs/compare/table.md
"""
import argparse
import copy
import glob
import os
import os.path as osp
import sys
import time

import torch

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
sys.path.insert(0, ROOT)  # this checkout's package
sys.path.insert(0, osp.join(ROOT, 'tools'))

import mmdet_rankloss  # noqa: E402,F401
from mmdet_rankloss.evaluation import retrieval_metrics  # noqa: E402
from retrieval_quickstart import embed  # noqa: E402

# the quickstart's digits config (its schedule is part of its name)
DEFAULT_CONFIG = (sorted(
    glob.glob(osp.join(ROOT, 'configs', 'retrieval', '*_digits.py'))) +
                  [None])[0]

# Losses at the settings of their papers where the papers give them; the
# digits batches are 5 classes x 12 images (60), so SoDeep's rows hold 59
# scores and its (handcrafted, lambda 10) sorter is built for that length.
LOSSES = {
    'rambo-log': dict(type='RaMBORecallLoss', weighting='log',
                      lambda_val=0.2, margin=0.02, memory=3),
    'fastap': dict(type='FastAPLoss', num_bins=10),
    'srt-f': dict(type='SoftRankThresholdLoss', soft_margin=True,
                  hard_weight=0.01, hard_warmup_iters=50),
    'sodeep-recall': dict(type='SoDeepRecallLoss',
                          sorter=dict(type='HandcraftedSorter', seq_len=59)),
    'auc-bh': dict(type='AUCLoss', strategy='hard', delta_s=0.05),
    'triplet-bh': dict(type='BatchHardTripletLoss', margin=0.3),
    'wilcoxon-bh': dict(type='WilcoxonLoss'),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--config', default=DEFAULT_CONFIG,
                        help='the digits config (default: %(default)s)')
    parser.add_argument('--losses', nargs='+', default=list(LOSSES),
                        choices=list(LOSSES))
    parser.add_argument('--seeds', nargs='+', type=int, default=[0, 1, 2])
    parser.add_argument('--epochs', type=int, help='override max_epochs')
    parser.add_argument('--batches-per-epoch', type=int,
                        help='override the sampler\'s batches per epoch')
    parser.add_argument('--work-dir', default='work_dirs/compare_losses')
    parser.add_argument('--out', help='also write the table to this file')
    parser.add_argument('--threads', type=int, default=1,
                        help='torch CPU threads (1 is fastest for this tiny '
                        'model on a busy machine)')
    return parser.parse_args(argv)


def run_one(base_cfg, loss_name: str, seed: int, args) -> dict:
    """Trains one (loss, seed) and returns its metrics and step time."""
    from mmengine.runner import Runner
    cfg = copy.deepcopy(base_cfg)
    cfg.model.loss = copy.deepcopy(LOSSES[loss_name])
    cfg.work_dir = osp.join(args.work_dir, f'{loss_name}_seed{seed}')
    cfg.randomness = dict(seed=seed)
    if args.epochs is not None:
        cfg.train_cfg.max_epochs = args.epochs
    if args.batches_per_epoch is not None:
        cfg.train_dataloader.sampler.num_batches = args.batches_per_epoch
    # evaluate once, after training, on the final weights
    test_loader_cfg = copy.deepcopy(cfg.test_dataloader)
    cfg.val_dataloader = cfg.val_cfg = cfg.val_evaluator = None
    cfg.default_hooks.checkpoint = None
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=10**6)
    cfg.log_level = 'WARNING'
    runner = Runner.from_cfg(cfg)
    start = time.time()
    runner.train()
    seconds = time.time() - start
    step_time = runner.message_hub.get_scalar('train/time').mean()
    emb, labels = embed(runner.model, runner.build_dataloader(test_loader_cfg))
    ks = tuple(base_cfg.test_evaluator.topk)
    metrics = retrieval_metrics(emb, labels, ks=ks)
    return dict(metrics={f'R@{k}': 100 * metrics[f'R@{k}']
                         for k in ks}, step_time=step_time,
                seconds=seconds, iters=runner.iter)


def format_table(results: dict, ks, seeds) -> str:
    """Markdown table: mean [min, max] over seeds per metric."""
    head = ['loss'] + [f'R@{k}' for k in ks] + ['s / step']
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for name, runs in results.items():
        cells = [name]
        for k in ks:
            vals = [r['metrics'][f'R@{k}'] for r in runs]
            cells.append(f'{sum(vals) / len(vals):.1f} '
                         f'[{min(vals):.1f}, {max(vals):.1f}]')
        times = [r['step_time'] for r in runs]
        cells.append(f'{sum(times) / len(times):.3f}')
        lines.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines) + (f'\n\n{len(seeds)} seed(s): '
                               f'{", ".join(map(str, seeds))}; mean '
                               '[min, max] in percent.')


def main(argv=None) -> dict:
    from mmengine.config import Config
    args = parse_args(argv)
    if not args.config or not osp.isfile(args.config):
        raise ValueError(f'config {args.config!r} not found; pass --config')
    if args.threads:
        torch.set_num_threads(args.threads)
    base_cfg = Config.fromfile(args.config)
    ks = tuple(base_cfg.test_evaluator.topk)
    results = {}
    for name in args.losses:
        results[name] = []
        for seed in args.seeds:
            out = run_one(base_cfg, name, seed, args)
            results[name].append(out)
            print(f'[compare] {name:14s} seed {seed}: ' + ', '.join(
                f'{k} {v:.1f}' for k, v in out['metrics'].items()) +
                  f'; {out["step_time"]:.3f} s/step, {out["iters"]} steps, '
                  f'{out["seconds"]:.0f} s', flush=True)
    table = format_table(results, ks, args.seeds)
    print(table)
    if args.out:
        if osp.dirname(args.out):
            os.makedirs(osp.dirname(args.out), exist_ok=True)
        with open(args.out, 'w') as f:
            f.write(table + '\n')
    return results


if __name__ == '__main__':
    main()
