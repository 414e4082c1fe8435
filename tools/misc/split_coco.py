#!/usr/bin/env python
"""Splits a COCO annotation file into two by image, at random: a train and
a held-out val file.

    python tools/misc/split_coco.py ANN.json TRAIN.json VAL.json \
        --val-fraction 0.2 --seed 0

Each image, with its annotations, goes to one file:
``round(val_fraction * images)`` (at least 1) to VAL.json, drawn with
``numpy.random.default_rng(seed)``. Ids are kept and the rest
(``categories``, ``info``, ``licenses``) copied to both.
"""
import argparse
import json
import os
import os.path as osp
from typing import Tuple

import numpy as np


def split_coco(data: dict, val_fraction: float,
               seed: int = 0) -> Tuple[dict, dict]:
    """``(train, val)`` COCO dicts of ``data`` (see the module docstring);
    ValueError for a fraction outside (0, 1) or fewer than two images."""
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f'split_coco: val_fraction must lie in (0, 1), got '
                         f'{val_fraction!r}')
    images = data.get('images') or []
    if len(images) < 2:
        raise ValueError('split_coco: the file needs at least 2 images to '
                         f'split, got {len(images)}')
    num_val = min(max(1, int(round(val_fraction * len(images)))),
                  len(images) - 1)
    order = np.random.default_rng(seed).permutation(len(images))
    val_idx = set(order[:num_val].tolist())
    val_ids = {images[i]['id'] for i in val_idx}
    out = []
    for in_val in (False, True):
        part = {k: v for k, v in data.items()
                if k not in ('images', 'annotations')}
        part['images'] = [img for i, img in enumerate(images)
                          if (i in val_idx) == in_val]
        part['annotations'] = [
            a for a in data.get('annotations', [])
            if (a['image_id'] in val_ids) == in_val]
        out.append(part)
    return out[0], out[1]


def main(argv=None) -> Tuple[dict, dict]:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('ann_file', help='the COCO annotation file to split')
    parser.add_argument('train_out', help='where to write the train part')
    parser.add_argument('val_out', help='where to write the val part')
    parser.add_argument('--val-fraction', type=float, default=0.2,
                        help='share of the images in the val part '
                        '(default 0.2)')
    parser.add_argument('--seed', type=int, default=0,
                        help='seed of the draw (default 0)')
    args = parser.parse_args(argv)
    with open(args.ann_file, encoding='utf-8') as f:
        data = json.load(f)
    try:
        train, val = split_coco(data, args.val_fraction, args.seed)
    except ValueError as e:
        raise SystemExit(f'{args.ann_file}: {e}')
    for part, path in ((train, args.train_out), (val, args.val_out)):
        if osp.abspath(path) == osp.abspath(args.ann_file):
            raise SystemExit(f'{path}: would overwrite the input file')
        os.makedirs(osp.dirname(osp.abspath(path)), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as f:
            json.dump(part, f)
    print(f'{len(train["images"])} images ({len(train["annotations"])} '
          f'boxes) to {args.train_out}, {len(val["images"])} images '
          f'({len(val["annotations"])} boxes) to {args.val_out}')
    return train, val


if __name__ == '__main__':
    main()
