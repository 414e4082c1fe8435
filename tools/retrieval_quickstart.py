#!/usr/bin/env python
"""Retrieval quickstart: train with the RaMBO recall loss, print Recall@K.

    python tools/retrieval_quickstart.py [--config CONFIG | --scene |
                                          --plain-digits]
        [--work-dir DIR] [--epochs N] [--seeds S ...] [--threads T]
        [--cfg-options KEY=VALUE ...]

Trains ``configs/retrieval/retrieval_r18-w16_rambo-log_20e_digit-instances.py``
on digit instances (docs/retrieval.md) and prints Recall@K and MAP@R of the
raw pixels, the same network untrained and the trained network (final
epoch, with the best and the last R@1 on val); the table is also written to
``<work-dir>/results.txt``. ``--plain-digits`` runs the older zero-shot demo
(train on digits 0-4, retrieve 5-9, plain centred digits), where raw pixels
beat the trained network; ``--scene`` the same split on random RGB scenes,
which does not learn yet. ``--seeds 0 1 2`` trains once per seed (each in
``<work-dir>/seed<S>``) and adds the mean and standard deviation.
"""
import argparse
import copy
import json
import os
import os.path as osp
import time

import numpy as np
import torch

import mmdet_rankloss  # noqa: F401

from rankloss_lab.run_logs import machine_name
from rankloss_lab.runner import run_plan
from mmdet_rankloss.evaluation import retrieval_metrics

CONFIG_DIR = osp.join(
    osp.dirname(osp.dirname(osp.abspath(__file__))), 'configs', 'retrieval')
DEFAULT_CONFIG = osp.join(
    CONFIG_DIR, 'retrieval_r18-w16_rambo-log_20e_digit-instances.py')
DIGITS_CONFIG = osp.join(CONFIG_DIR,
                         'retrieval_r18-w16_rambo-log_10e_digits.py')
SCENE_CONFIG = osp.join(CONFIG_DIR,
                        'retrieval_r18-w16_rambo-log_10e_digits-scene.py')
ROWS = ('pixels, no network', 'untrained network', 'trained, final epoch')
# `--loss`: the config's loss replaced by a peer's, at its paper's settings
# where the paper gives them (compared by tools/retrieval_study.py, e.g.
# lab/rankloss_lab/studies/digit_instances_losses.py; the lr stays the config's
# unless set). The batches are 60 images, so SoDeep's rows hold 59 scores
# and its (handcrafted, lambda 10) sorter is built for that length.
PEER_LOSSES = {
    'fastap': dict(type='FastAPLoss', num_bins=10),
    'triplet-bh': dict(type='BatchHardTripletLoss', margin=0.3),
    'srt-f': dict(type='SoftRankThresholdLoss', soft_margin=True,
                  hard_weight=0.01, hard_warmup_iters=50),
    'sodeep-recall': dict(type='SoDeepRecallLoss',
                          sorter=dict(type='HandcraftedSorter', seq_len=59)),
    'auc-bh': dict(type='AUCLoss', strategy='hard', delta_s=0.05),
    'wilcoxon-bh': dict(type='WilcoxonLoss'),
}


def parse_args(argv=None):
    from mmengine.config import DictAction
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument('--config', default=DEFAULT_CONFIG)
    group.add_argument(
        '--scene',
        action='store_const',
        dest='config',
        const=SCENE_CONFIG,
        help='digit classes 5-9 on random RGB scenes (raw pixels fail '
        'there, but the network does not learn them yet either)')
    group.add_argument(
        '--plain-digits',
        action='store_const',
        dest='config',
        const=DIGITS_CONFIG,
        help='plain centred digits, classes 5-9 unseen (raw pixels win)')
    parser.add_argument(
        '--work-dir', default='work_dirs/retrieval_quickstart')
    parser.add_argument('--epochs', type=int, help='override max_epochs')
    parser.add_argument(
        '--loss', choices=sorted(PEER_LOSSES),
        help='train with this peer loss instead of the config\'s RaMBO '
        'recall loss (everything else unchanged)')
    parser.add_argument(
        '--seeds',
        type=int,
        nargs='+',
        default=[0],
        help='one training run per seed (default: 0)')
    parser.add_argument(
        '--threads',
        type=int,
        default=1,
        help='torch CPU threads (default 1: for this tiny model more '
        'threads add overhead, and a busy machine makes them much slower)')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    return parser.parse_args(argv)


@torch.no_grad()
def embed(model, dataloader):
    """Embeddings and labels of a whole dataloader (model in eval mode)."""
    was_training = model.training
    model.eval()
    embeddings, labels = [], []
    for data in dataloader:
        for sample in model.test_step(data):
            embeddings.append(sample.pred_embedding.float().cpu())
            labels.append(int(sample.gt_label))
    model.train(was_training)
    return torch.stack(embeddings), torch.tensor(labels)


def pixels(dataloader):
    """Raw test images, flattened and L2-normalised (a no-network baseline)."""
    images, labels = [], []
    for data in dataloader:
        images += [x.float().flatten() for x in data['inputs']]
        labels += [int(s.gt_label) for s in data['data_samples']]
    emb = torch.nn.functional.normalize(torch.stack(images), dim=1)
    return emb, torch.tensor(labels)


def main(argv=None):
    args = parse_args(argv)
    threads = torch.get_num_threads()
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        return run_all(args)
    finally:
        torch.set_num_threads(threads)


def format_row(name, values, ks, spread=None):
    """One table row: R@k and MAP@R in percent (with ``± spread``)."""
    cells = []
    for i, key in enumerate([f'R@{k}' for k in ks] + ['MAP@R']):
        cell = f'{100 * values[key]:5.1f}'
        if spread is not None:
            cell += f' ± {100 * spread[key]:4.1f}'
        cells.append(cell)
    return ' | '.join([f'{name:22s}'] + cells)


def run_all(args):
    """Train once per seed, print and write the table(s).

    Returns:
        dict: ``{seed: {row name: metrics}}`` plus ``'seconds'`` per seed.
    """
    multi = len(args.seeds) > 1
    report = []
    runs = run_plan(
        args.seeds,
        lambda seed: run(args, seed, osp.join(args.work_dir, f'seed{seed}')
                         if multi else args.work_dir),
        lambda seed: False,
        lambda seed, out: f'seed {seed}: test R@1 '
        f'{100 * out[ROWS[-1]]["R@1"]:.1f}',
        header=f'[retrieval quickstart] {osp.basename(args.config)}',
        prefix='[retrieval quickstart] ')
    results = dict(zip(args.seeds, runs))
    ks = results[args.seeds[0]]['ks']
    header = ' | '.join([f'{"":22s}'] + [f'R@{k:<3d}' for k in ks] +
                        ['MAP@R'])
    report.append(f'Retrieval quickstart ({osp.basename(args.config)}): '
                  f'{results[args.seeds[0]]["task"]} (query = gallery, '
                  'self excluded), in percent')
    for seed in args.seeds:
        out = results[seed]
        report += [f'seed {seed}:', header, '-' * len(header)]
        report += [format_row(name, out[name], ks) for name in ROWS]
        if out['best'] is not None:
            report.append(f'best R@1 during training (checkpoint kept): '
                          f'{100 * out["best"]:.1f}')
        if out.get('last_val') is not None and not out['val_is_test']:
            report.append(f'val R@1 at the last evaluation (what settings '
                          f'are chosen by): {100 * out["last_val"]:.1f}')
        report.append(f'training + periodic evaluation: '
                      f'{out["seconds"]:.0f} s')
    if multi:
        report += [
            f'mean ± standard deviation over seeds {args.seeds}:', header,
            '-' * len(header)
        ]
        for name in ROWS:
            keys = [f'R@{k}' for k in ks] + ['MAP@R']
            values = np.array([[results[s][name][k] for k in keys]
                               for s in args.seeds])
            mean, std = values.mean(0), values.std(0, ddof=1)
            report.append(
                format_row(name, dict(zip(keys, mean)), ks,
                           dict(zip(keys, std))))
        seconds = [results[s]['seconds'] for s in args.seeds]
        report.append(f'training + periodic evaluation: {np.mean(seconds):.0f}'
                      f' s per seed (total {np.sum(seconds):.0f} s)')
    print('\n' + '\n'.join(report))
    os.makedirs(args.work_dir, exist_ok=True)
    path = osp.join(args.work_dir, 'results.txt')
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join(report) + '\n')
    with open(osp.join(args.work_dir, 'results.json'), 'w',
              encoding='utf-8') as f:
        json.dump(results_as_json(args, results), f, indent=1)
    print(f'results written to {path} (and results.json); logs and '
          f'checkpoints under {args.work_dir}')
    return results


def results_as_json(args, results) -> dict:
    """The numbers of :func:`run_all` as plain JSON types, per seed, for
    tools that collect runs (``tools/retrieval_study.py``)."""
    seeds = {}
    for seed, out in results.items():
        row = {name: {k: float(v) for k, v in out[name].items()}
               for name in ROWS}
        row.update(
            seconds=float(out['seconds']),
            last_val_r1=None if out.get('last_val') is None else float(
                out['last_val']),
            val_is_test=bool(out['val_is_test']))
        seeds[str(seed)] = row
    return dict(config=osp.relpath(osp.abspath(args.config)),
                loss=args.loss,
                cfg_options=dict(args.cfg_options or {}),
                machine=machine_name(), seeds=seeds)


def last_val_r1(runner):
    """R@1 of the last validation during training, or None."""
    key = 'val/retrieval/R@1'
    if key not in runner.message_hub.log_scalars:
        return None
    return float(runner.message_hub.get_scalar(key).current())


def run(args, seed, work_dir):
    """Train one seed; the three rows' metrics (see the module docstring)."""
    from mmengine.config import Config
    from mmengine.runner import Runner
    cfg = Config.fromfile(args.config)
    if args.loss:
        cfg.model.loss = dict(PEER_LOSSES[args.loss])  # replaced, not merged
    if args.cfg_options:
        cfg.merge_from_dict(args.cfg_options)
    cfg.work_dir = work_dir
    cfg.randomness = dict(seed=seed)
    if args.epochs is not None:
        cfg.train_cfg.max_epochs = args.epochs
    ks = tuple(cfg.val_evaluator.topk)

    start = time.time()
    runner = Runner.from_cfg(cfg)
    # train() initialises the weights first; doing it here (once: MMEngine
    # skips a second init) lets us keep a copy of the untrained network
    runner._init_model_weights()
    untrained = copy.deepcopy(runner.model)
    runner.train()
    seconds = time.time() - start
    # the test split; the validation loader itself when it is the same
    # split (its transforms keep the fixed scenes rendered during training)
    same = runner.val_loop is not None and \
        cfg.val_dataloader == cfg.test_dataloader
    test_loader = runner.val_loop.dataloader if same else \
        runner.build_dataloader(cfg.test_dataloader)
    val_is_test = cfg.val_dataloader == cfg.test_dataloader
    loss = cfg.model.loss.type
    if cfg.test_dataloader.dataset.type == 'DigitInstancesDataset':
        task = (f'{loss}, trained on the train digit instances, retrieving '
                'the other views of each held-out test instance')
    else:
        task = (f'{loss}, trained on digits 0-4, retrieving digits 5-9')

    out = dict(ks=ks, seconds=seconds,
               best=runner.message_hub.get_info('best_score'),
               last_val=last_val_r1(runner), val_is_test=val_is_test,
               task=task)
    for name, (emb, labels) in zip(ROWS, [
            pixels(test_loader),
            embed(untrained, test_loader),
            embed(runner.model, test_loader)
    ]):
        out[name] = retrieval_metrics(emb, labels, ks=ks)
    return out


if __name__ == '__main__':
    main()
