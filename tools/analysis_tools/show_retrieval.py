#!/usr/bin/env python
"""Query / top-k grids of a retrieval model: right and wrong neighbours.

    python tools/analysis_tools/show_retrieval.py CONFIG CHECKPOINT \
        [--out docs/images/retrieval_topk.png] [--num-queries 8] [--topk 6] \
        [--query-ids I ...] [--seed 0] [--scale 8] \
        [--cfg-options KEY=VALUE ...]

The model of ``CONFIG`` (a ``configs/retrieval/`` config) is built through
MMEngine's Runner, ``CHECKPOINT`` (e.g. the ``best_retrieval_R@1_*.pth`` a
training run kept) is loaded, and the test set of ``test_dataloader`` is
embedded. Retrieval follows the evaluation protocol of
:class:`~mmdet_rankloss.evaluation.RetrievalMetric`: each image is a query,
the rest of the test set its gallery, neighbours by cosine similarity. Each
row of the picture is a query (blue frame) and its ``--topk`` nearest
neighbours, framed green when they share the query's class and red when they
do not. Queries are drawn at random (``--seed``) or given by index
(``--query-ids``). The R@1 printed is over every query of the test set, so
it can be compared with the run's log.
"""
import argparse
import os
import os.path as osp
import tempfile
from typing import List, Sequence, Tuple

import numpy as np
import torch

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
import mmdet_rankloss  # noqa: F401

DEFAULT_OUT = osp.join(ROOT, 'docs', 'images', 'retrieval_topk.png')
QUERY, RIGHT, WRONG = (40, 90, 220), (30, 170, 60), (220, 40, 40)


# Test images up to this side are kept as the pipeline made them, so that
# the picture shows what the network saw (e.g. RandomDigitScene's views,
# drawn in the pipeline); larger ones are read again from their files.
MAX_KEPT_SIDE = 96


@torch.no_grad()
def embed_test_set(config: str, checkpoint: str, cfg_options=None):
    """Embeddings (N, D), labels (N,), the dataset of the test split, and
    the images as the test pipeline made them ((H, W, C) uint8 each), or
    None when they are larger than ``MAX_KEPT_SIDE``."""
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
        # a visualizer of its own, writing nothing: MMEngine hands out an
        # existing instance of the same name (the configs' 'visualizer'),
        # whose backend may point at an earlier run's deleted work_dir
        cfg.visualizer = dict(
            type='Visualizer', vis_backends=[],
            name=f'show_retrieval_{osp.basename(work_dir)}')
        runner = Runner.from_cfg(cfg)
        runner.load_checkpoint(checkpoint, map_location='cpu')
        loader = runner.build_dataloader(cfg.test_dataloader)
        model = runner.model.eval()
        embeddings, labels, views = [], [], []
        for data in loader:
            for image in data['inputs']:
                if views is not None and max(
                        image.shape[-2:]) <= MAX_KEPT_SIDE:
                    views.append(image.permute(1, 2, 0).numpy())
                else:
                    views = None
            for sample in model.test_step(data):
                embeddings.append(sample.pred_embedding.float().cpu())
                labels.append(int(sample.gt_label))
    dataset = loader.dataset
    if len(labels) != len(dataset) or any(
            int(dataset.get_data_info(i)['gt_label']) != label
            for i, label in enumerate(labels)):
        raise RuntimeError(f'{config}: test_dataloader does not yield the '
                           'dataset in order (shuffled sampler?)')
    emb = torch.nn.functional.normalize(torch.stack(embeddings), dim=1)
    return emb, torch.tensor(labels), dataset, views


def nearest(emb: torch.Tensor, query_ids: Sequence[int],
            k: int) -> torch.Tensor:
    """Indices (Q, k) of the ``k`` most similar items to each query, the
    query itself left out; ties broken by index."""
    if k >= len(emb):
        raise ValueError(f'--topk {k} needs more than {k} test items, the '
                         f'test set has {len(emb)}')
    sim = emb[list(query_ids)] @ emb.T
    sim[torch.arange(len(query_ids)), torch.as_tensor(query_ids)] = -np.inf
    # stable sort of -sim: equal similarities keep index order
    return torch.sort(-sim, dim=1, stable=True).indices[:, :k]


def recall_at_1(emb: torch.Tensor, labels: torch.Tensor) -> float:
    top1 = nearest(emb, range(len(emb)), 1)[:, 0]
    return float((labels[top1] == labels).float().mean())


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


def parse_args(argv=None):
    from mmengine.config import DictAction
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument('checkpoint')
    parser.add_argument('--out', default=DEFAULT_OUT, help='PNG to write')
    parser.add_argument('--num-queries', type=int, default=8)
    parser.add_argument('--query-ids', type=int, nargs='+',
                        help='test-set indices of the queries')
    parser.add_argument('--topk', type=int, default=6)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--scale', type=int, default=64,
                        help='thumbnail side in pixels')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    args = parser.parse_args(argv)
    if args.topk < 1 or args.num_queries < 1 or args.scale < 8:
        parser.error(f'need --topk >= 1, --num-queries >= 1, --scale >= 8; '
                     f'got {args.topk}, {args.num_queries}, {args.scale}')
    return args


def pick_queries(args, num_items: int) -> List[int]:
    if args.query_ids:
        bad = [i for i in args.query_ids if not 0 <= i < num_items]
        if bad:
            raise ValueError(f'--query-ids {bad} out of range: the test set '
                             f'has {num_items} items (0..{num_items - 1})')
        return list(args.query_ids)
    g = torch.Generator().manual_seed(args.seed)
    count = min(args.num_queries, num_items)
    return sorted(torch.randperm(num_items, generator=g)[:count].tolist())


def main(argv=None) -> Tuple[float, str]:
    args = parse_args(argv)
    emb, labels, dataset, views = embed_test_set(
        args.config, args.checkpoint, args.cfg_options)
    query_ids = pick_queries(args, len(emb))
    neighbours = nearest(emb, query_ids, args.topk)
    classes = (dataset.metainfo or {}).get('classes')
    picture = grid(dataset, labels, query_ids, neighbours, args.scale,
                   classes if classes and len(classes) > int(labels.max())
                   else None, views)
    if osp.dirname(args.out):
        os.makedirs(osp.dirname(args.out), exist_ok=True)
    picture.save(args.out)
    r1 = recall_at_1(emb, labels)
    shown = (labels[neighbours] == labels[query_ids][:, None]).float().mean()
    print(f'{len(emb)} test items; R@1 over all queries {100 * r1:.1f} %; '
          f'{100 * float(shown):.1f} % of the {neighbours.numel()} '
          f'neighbours shown are right')
    print(f'retrieval grid written to {args.out}')
    return r1, args.out


if __name__ == '__main__':
    main()
