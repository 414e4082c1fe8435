#!/usr/bin/env python
"""Writes the DigitsVOC detection benchmark in the Pascal VOC2007 layout.

    python tools/make_digits_voc.py [ROOT] [--train 384] [--val 160]
        [--test 320] [--image-size 128] [--seed 0]

ROOT (default ``data/digits_voc/VOCdevkit``) receives ``VOC2007/`` with
JPEGImages, Annotations (VOC XML with truncated and difficult flags) and
ImageSets/Main (train, val, trainval, test): real handwritten digits from
scikit-learn on textured, cluttered backgrounds, see
:mod:`mmdet_rankloss.utils.digits_voc`. Deterministic: the same arguments
give the same files.
"""
import argparse
import os.path as osp
import sys

sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from mmdet_rankloss.utils.digits_voc import (  # noqa: E402
    DEFAULT_SPLITS, make_digits_voc)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument(
        'root', nargs='?', default='data/digits_voc/VOCdevkit',
        help='VOCdevkit directory to write (default: %(default)s)')
    defaults = dict(DEFAULT_SPLITS)
    for split in ('train', 'val', 'test'):
        parser.add_argument(
            f'--{split}', type=int, default=defaults[split],
            help=f'images in {split} (default: %(default)s)')
    parser.add_argument('--image-size', type=int, default=128)
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)
    stats = make_digits_voc(
        args.root,
        splits=[(s, getattr(args, s)) for s in ('train', 'val', 'test')],
        image_size=args.image_size,
        seed=args.seed)
    for split, c in stats.items():
        print(f'{split}: {c["images"]} images, {c["objects"]} objects '
              f'({c["difficult"]} difficult, {c["truncated"]} truncated), '
              f'per class {c["counts"]}')
    print(f'written to {osp.join(args.root, "VOC2007")}')


if __name__ == '__main__':
    main()
