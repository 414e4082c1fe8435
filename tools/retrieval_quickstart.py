#!/usr/bin/env python
"""Retrieval quickstart: train with the RaMBO recall loss, print Recall@K.

Trains the small ResNet-18 of
``configs/retrieval/retrieval_r18-w16_rambo-log_10e_digits.py`` from scratch
on scikit-learn's handwritten digits 0-4 (shipped inside scikit-learn:
nothing is downloaded) through MMEngine's Runner, then retrieves among the
unseen digits 5-9 and prints Recall@K and MAP@R of

* the raw pixels (no network),
* the same network untrained (same seed, initial weights),
* the trained network (final epoch), and the best R@1 seen during training.

MMEngine's logger prints the training ETA every few iterations; the table
is also written to ``<work-dir>/results.txt``, and the last line says where
the results, logs and checkpoints are. About a minute on 2 CPU cores (one
thread by default)::

    python tools/retrieval_quickstart.py [--config CONFIG] [--work-dir DIR]
        [--epochs N] [--seed S] [--threads T] [--cfg-options KEY=VALUE ...]
"""
import argparse
import copy
import os.path as osp
import sys
import time

import torch

# Running from a checkout: use this checkout's package.
sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

import mmdet_rankloss  # noqa: E402,F401
from mmdet_rankloss.evaluation import retrieval_metrics  # noqa: E402

DEFAULT_CONFIG = osp.join(
    osp.dirname(osp.dirname(osp.abspath(__file__))), 'configs', 'retrieval',
    'retrieval_r18-w16_rambo-log_10e_digits.py')


def parse_args(argv=None):
    from mmengine.config import DictAction
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--config', default=DEFAULT_CONFIG)
    parser.add_argument(
        '--work-dir', default='work_dirs/retrieval_quickstart')
    parser.add_argument('--epochs', type=int, help='override max_epochs')
    parser.add_argument('--seed', type=int, default=0)
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
        run(args)
    finally:
        torch.set_num_threads(threads)


def run(args):
    """Train, evaluate and print the table (see the module docstring)."""
    from mmengine.config import Config
    from mmengine.runner import Runner
    cfg = Config.fromfile(args.config)
    if args.cfg_options:
        cfg.merge_from_dict(args.cfg_options)
    cfg.work_dir = args.work_dir
    cfg.randomness = dict(seed=args.seed)
    if args.epochs is not None:
        cfg.train_cfg.max_epochs = args.epochs
    ks = tuple(cfg.val_evaluator.topk)

    start = time.time()
    runner = Runner.from_cfg(cfg)
    # train() initialises the weights first; doing it here (once: MMEngine
    # skips a second init) lets us keep a copy of the untrained network
    runner._init_model_weights()
    untrained = copy.deepcopy(runner.model)
    test_loader = runner.build_dataloader(cfg.test_dataloader)
    runner.train()
    train_time = time.time() - start

    rows = [('pixels, no network', pixels(test_loader)),
            ('untrained network', embed(untrained, test_loader)),
            ('trained, final epoch', embed(runner.model, test_loader))]
    header = ' | '.join([f'{"":22s}'] + [f'R@{k:<4d}' for k in ks] +
                        ['MAP@R'])
    lines = [header, '-' * len(header)]
    for name, (emb, labels) in rows:
        out = retrieval_metrics(emb, labels, ks=ks)
        values = [f'{100 * out[f"R@{k}"]:6.1f}' for k in ks]
        values.append(f'{100 * out["MAP@R"]:5.1f}')
        lines.append(' | '.join([f'{name:22s}'] + values))
    best = runner.message_hub.get_info('best_score')
    report = ['Retrieval quickstart: RaMBO recall loss, trained on digits '
              '0-4, retrieving digits 5-9 (query = gallery, self excluded), '
              'in percent'] + lines
    if best is not None:
        report.append(f'best R@1 during training (checkpoint kept): '
                      f'{100 * best:.1f}')
    report.append(f'training + periodic evaluation: {train_time:.0f} s')
    print('\n' + '\n'.join(report))
    results = osp.join(cfg.work_dir, 'results.txt')
    with open(results, 'w', encoding='utf-8') as f:
        f.write('\n'.join(report) + '\n')
    print(f'results written to {results}; logs and checkpoints under '
          f'{cfg.work_dir}')


if __name__ == '__main__':
    main()
