#!/usr/bin/env python
"""Retrieval quickstart: train with the RaMBO recall loss, print Recall@K.

    python tools/retrieval_quickstart.py [--seeds S ...] ...
    python tools/retrieval_quickstart.py --show CHECKPOINT [--out PNG] ...

Prints and writes ``<work-dir>/results.txt`` (several ``--seeds``: per
seed in ``<work-dir>/seed<S>``, with mean and sd); ``--show`` draws a
checkpoint's retrievals, queries from the first seed (docs/retrieval.md).
"""
import argparse
import copy
import json
import os
import os.path as osp
import tempfile
import time
from typing import List, Sequence, Tuple

import numpy as np
import torch

import mmdet_rankloss  # noqa: F401
from mmdet_rankloss.evaluation import recall_at_k, retrieval_metrics
from rankloss_lab.run_logs import machine_name
from rankloss_lab.runner import run_plan

CONFIG_DIR = osp.join(
    osp.dirname(osp.dirname(osp.abspath(__file__))), 'configs', 'retrieval')
DEFAULT_CONFIG = osp.join(
    CONFIG_DIR, 'retrieval_r18-w16_rambo-log_20e_digit-instances.py')
DEFAULT_OUT = osp.join(osp.dirname(osp.dirname(CONFIG_DIR)), 'docs',
                       'images', 'retrieval_topk.png')
QUERY, RIGHT, WRONG = (40, 90, 220), (30, 170, 60), (220, 40, 40)
ROWS = ('pixels, no network', 'untrained network', 'trained, final epoch')
# `--loss`: the config's loss replaced by a peer's, at its paper's settings
# where it gives them (the lr stays the config's). The batches are 60
# images, so SoDeep's rows hold 59 scores and its sorter is built for that.
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
    parser.add_argument('--config', default=DEFAULT_CONFIG)
    parser.add_argument('--work-dir', default='work_dirs/retrieval_quickstart')
    parser.add_argument('--epochs', type=int, help='override max_epochs')
    parser.add_argument('--loss', choices=sorted(PEER_LOSSES),
                        help="train with this peer loss instead of the "
                        "config's RaMBO recall loss (everything else "
                        'unchanged)')
    parser.add_argument('--seeds', type=int, nargs='+', default=[0],
                        help='one training run per seed (default: 0)')
    parser.add_argument('--threads', type=int, default=1,
                        help='torch CPU threads (default 1: for this tiny '
                        'model more threads add overhead, and a busy machine '
                        'makes them much slower)')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    parser.add_argument('--show', metavar='CHECKPOINT',
                        help='draw retrievals of this checkpoint instead '
                        'of training')
    parser.add_argument('--out', default=DEFAULT_OUT, help='PNG to write')
    parser.add_argument('--num-queries', type=int, default=8)
    parser.add_argument('--query-ids', type=int, nargs='+',
                        help='test-set indices of the queries')
    parser.add_argument('--topk', type=int, default=6)
    parser.add_argument('--scale', type=int, default=64,
                        help='thumbnail side in pixels')
    args = parser.parse_args(argv)
    if args.topk < 1 or args.num_queries < 1 or args.scale < 8:
        parser.error(f'need --topk >= 1, --num-queries >= 1, --scale >= 8; '
                     f'got {args.topk}, {args.num_queries}, {args.scale}')
    return args


@torch.no_grad()
def embed(model, dataloader, views=None):
    """Embeddings and labels of a whole dataloader (model in eval mode);
    the input images, (H, W, C) each, are appended to the list ``views``."""
    was_training = model.training
    model.eval()
    embeddings, labels = [], []
    for data in dataloader:
        if views is not None:
            views += [x.permute(1, 2, 0).numpy() for x in data['inputs']]
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
        return show(args) if args.show else run_all(args)
    finally:
        torch.set_num_threads(threads)


def _keys(ks):
    return [f'R@{k}' for k in ks] + ['MAP@R']


def format_row(name, values, ks, spread=None):
    """One table row: R@k and MAP@R in percent (with ``± spread``)."""
    return ' | '.join([f'{name:22s}'] + [
        f'{100 * values[key]:5.1f}' +
        ('' if spread is None else f' ± {100 * spread[key]:4.1f}')
        for key in _keys(ks)])


def run_all(args):
    """Trains once per seed, prints and writes the table(s); returns
    ``{seed: {row name: metrics, 'seconds': ...}}``."""
    multi = len(args.seeds) > 1
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
    report = [f'Retrieval quickstart ({osp.basename(args.config)}): '
              f'{results[args.seeds[0]]["task"]} (query = gallery, '
              'self excluded), in percent']
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
        report += [f'mean ± standard deviation over seeds {args.seeds}:',
                   header, '-' * len(header)]
        keys = _keys(ks)
        for name in ROWS:
            values = np.array([[results[s][name][k] for k in keys]
                               for s in args.seeds])
            mean, std = values.mean(0), values.std(0, ddof=1)
            report.append(format_row(name, dict(zip(keys, mean)), ks,
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
    return dict(config=osp.relpath(osp.abspath(args.config)), loss=args.loss,
                cfg_options=dict(args.cfg_options or {}),
                machine=machine_name(), seeds=seeds)


def last_val_r1(runner):
    """R@1 of the last validation during training, or None."""
    key = 'val/retrieval/R@1'
    if key not in runner.message_hub.log_scalars:
        return None
    return float(runner.message_hub.get_scalar(key).current())


def run(args, seed, work_dir):
    """Trains one seed; the three rows' metrics."""
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
    runner._init_model_weights()  # once (train() skips it): kept untrained
    untrained = copy.deepcopy(runner.model)
    runner.train()
    seconds = time.time() - start
    # the val loader itself when it is the test split (its transforms keep
    # the fixed scenes rendered during training)
    val_is_test = cfg.val_dataloader == cfg.test_dataloader
    test_loader = runner.val_loop.dataloader if (
        runner.val_loop is not None and val_is_test) else \
        runner.build_dataloader(cfg.test_dataloader)
    loss = cfg.model.loss.type
    if cfg.test_dataloader.dataset.type == 'DigitInstancesDataset':
        task = (f'{loss}, trained on the train digit instances, retrieving '
                'the other views of each held-out test instance')
    else:
        task = f'{loss} on {cfg.test_dataloader.dataset.type}'

    out = dict(ks=ks, seconds=seconds,
               best=runner.message_hub.get_info('best_score'),
               last_val=last_val_r1(runner), val_is_test=val_is_test,
               task=task)
    for name, (emb, labels) in zip(ROWS, [
            pixels(test_loader), embed(untrained, test_loader),
            embed(runner.model, test_loader)]):
        out[name] = retrieval_metrics(emb, labels, ks=ks)
    return out


# Test images up to this side are drawn as the pipeline made them (what the
# network saw); larger ones are read again from their files.
MAX_KEPT_SIDE = 96


@torch.no_grad()
def embed_test_set(config: str, checkpoint: str, cfg_options=None):
    """Embeddings (N, D), labels (N,), the test dataset and its images as
    the pipeline made them ((H, W, C) uint8; None past ``MAX_KEPT_SIDE``)."""
    from mmengine.config import Config
    from mmengine.runner import Runner
    if not osp.isfile(checkpoint):
        raise FileNotFoundError(f'checkpoint {checkpoint}: no such file')
    cfg = Config.fromfile(config)
    if cfg_options:
        cfg.merge_from_dict(cfg_options)
    if 'test_dataloader' not in cfg or 'model' not in cfg:
        raise ValueError(f'{config} has no model or test_dataloader: not a '
                         'retrieval config')
    with tempfile.TemporaryDirectory() as work_dir:
        cfg.work_dir = work_dir
        cfg.log_level = 'WARNING'
        # only the test split is needed: no training data is built
        for key in ('train_dataloader', 'train_cfg', 'optim_wrapper',
                    'val_dataloader', 'val_cfg', 'val_evaluator',
                    'param_scheduler'):
            cfg.pop(key, None)
        cfg.default_hooks = dict(
            {k: None for k in cfg.get('default_hooks', {})})
        # a visualizer of its own: one of the configs' name may write to an
        # earlier run's deleted work_dir
        cfg.visualizer = dict(
            type='Visualizer', vis_backends=[],
            name=f'show_retrieval_{osp.basename(work_dir)}')
        runner = Runner.from_cfg(cfg)
        runner.load_checkpoint(checkpoint, map_location='cpu')
        loader = runner.build_dataloader(cfg.test_dataloader)
        dataset = loader.dataset
        side = max(dataset[0]['inputs'].shape[-2:]) if len(dataset) else 0
        views = [] if side <= MAX_KEPT_SIDE else None
        embeddings, labels = embed(runner.model, loader, views)
    if len(labels) != len(dataset) or any(
            int(dataset.get_data_info(i)['gt_label']) != label
            for i, label in enumerate(labels.tolist())):
        raise RuntimeError(f'{config}: test_dataloader does not yield the '
                           'dataset in order (shuffled sampler?)')
    emb = torch.nn.functional.normalize(embeddings, dim=1)
    return emb, labels, dataset, views


def nearest(emb: torch.Tensor, query_ids: Sequence[int],
            k: int) -> torch.Tensor:
    """Indices (Q, k) of the ``k`` items most similar to each query, but
    itself; ties broken by index."""
    if k >= len(emb):
        raise ValueError(f'--topk {k} needs more than {k} test items, the '
                         f'test set has {len(emb)}')
    sim = emb[list(query_ids)] @ emb.T
    sim[torch.arange(len(query_ids)), torch.as_tensor(query_ids)] = -np.inf
    return torch.sort(-sim, dim=1, stable=True).indices[:, :k]


def thumbnail(dataset, index: int, size: int, views=None) -> np.ndarray:
    """The test image as RGB uint8 (size, size): the pipeline's view when
    ``views`` holds it, else as stored."""
    from PIL import Image
    info = dataset.get_data_info(index)
    if views is not None:
        image = np.asarray(views[index])
        if image.shape[-1] == 1:
            image = image[..., 0]
    elif 'img' in info:
        image = np.asarray(info['img'])
    else:
        import mmcv
        image = mmcv.imread(info['img_path'], channel_order='rgb')
    if image.ndim == 2:
        image = np.repeat(image[..., None], 3, axis=2)
    small = max(image.shape[:2]) <= size // 4
    return np.asarray(Image.fromarray(image.astype(np.uint8)).resize(
        (size, size), Image.NEAREST if small else Image.BILINEAR))


def grid(dataset, labels: torch.Tensor, query_ids: Sequence[int],
         neighbours: torch.Tensor, size: int, class_names=None, views=None):
    """The picture: one row per query, frames by correctness."""
    from PIL import Image, ImageDraw
    pad, frame, text = 6, max(2, size // 24), 14
    cols = neighbours.shape[1] + 1
    cell = size + 2 * frame
    width = cols * (cell + pad) + pad + pad
    height = len(query_ids) * (cell + text + pad) + pad + text
    canvas = Image.new('RGB', (width, height), 'white')
    draw = ImageDraw.Draw(canvas)
    draw.text((pad, 2), 'query', fill=QUERY)
    draw.text((pad + cell + 2 * pad, 2),
              f'top-{cols - 1} neighbours (green: same class, red: other)',
              fill=(0, 0, 0))

    def name(i):
        label = int(labels[i])
        return str(class_names[label]) if class_names else str(label)

    for row, (q, ids) in enumerate(zip(query_ids, neighbours.tolist())):
        y = pad + text + row * (cell + text + pad)
        for col, i in enumerate([q] + ids):
            x = pad + col * (cell + pad) + (pad if col else 0)
            colour = QUERY if col == 0 else (
                RIGHT if labels[i] == labels[q] else WRONG)
            draw.rectangle([x, y, x + cell - 1, y + cell - 1], fill=colour)
            canvas.paste(Image.fromarray(thumbnail(dataset, i, size, views)),
                         (x + frame, y + frame))
            draw.text((x, y + cell + 1), f'{name(i)}  (#{i})', fill=colour)
    return canvas


def pick_queries(args, num_items: int) -> List[int]:
    if args.query_ids:
        bad = [i for i in args.query_ids if not 0 <= i < num_items]
        if bad:
            raise ValueError(f'--query-ids {bad} out of range: the test set '
                             f'has {num_items} items (0..{num_items - 1})')
        return list(args.query_ids)
    g = torch.Generator().manual_seed(args.seeds[0])
    count = min(args.num_queries, num_items)
    return sorted(torch.randperm(num_items, generator=g)[:count].tolist())


def show(args) -> Tuple[float, str]:
    """Draw the ``--show`` picture; R@1 over all test queries, its path."""
    emb, labels, dataset, views = embed_test_set(
        args.config, args.show, args.cfg_options)
    query_ids = pick_queries(args, len(emb))
    neighbours = nearest(emb, query_ids, args.topk)
    classes = (dataset.metainfo or {}).get('classes')
    picture = grid(dataset, labels, query_ids, neighbours, args.scale,
                   classes if classes and len(classes) > int(labels.max())
                   else None, views)
    if osp.dirname(args.out):
        os.makedirs(osp.dirname(args.out), exist_ok=True)
    picture.save(args.out)
    r1 = recall_at_k(emb, labels, ks=(1, ))[1]
    shown = (labels[neighbours] == labels[query_ids][:, None]).float().mean()
    print(f'{len(emb)} test items; R@1 over all queries {100 * r1:.1f} %; '
          f'{100 * float(shown):.1f} % of the {neighbours.numel()} '
          f'neighbours shown are right')
    print(f'retrieval grid written to {args.out}')
    return r1, args.out


if __name__ == '__main__':
    main()
