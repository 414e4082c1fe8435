#!/usr/bin/env python
"""Writes the embedded toy dataset in the Pascal VOC layout.

    python tools/dataset_converters/make_toy_voc.py [ROOT] [--num-val 0]
        [--with-voc2012]

ROOT defaults to ``data/toy_voc/VOCdevkit``; see
:mod:`rankloss_lab.datasets.toy_voc` (deterministic).
"""
import argparse
import os.path as osp

from rankloss_lab.datasets.toy_voc import make_toy_voc


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('root', nargs='?', default='data/toy_voc/VOCdevkit',
                        help='VOCdevkit directory to write (default: '
                        '%(default)s)')
    parser.add_argument('--num-trainval', type=int, default=256)
    parser.add_argument('--num-test', type=int, default=64)
    parser.add_argument('--num-val', type=int, default=0,
                        help='images of a held-out VOC2007 val split, not '
                        'part of trainval (for a score calibration)')
    parser.add_argument('--image-size', type=int, default=128)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--with-voc2012', action='store_true',
                        help='also write a VOC2012 trainval split (for the '
                        'VOC07+12 configs)')
    args = parser.parse_args(argv)
    stats = make_toy_voc(
        args.root, num_trainval=args.num_trainval, num_test=args.num_test,
        image_size=args.image_size, seed=args.seed,
        with_voc2012=args.with_voc2012, num_val=args.num_val)
    for split, counts in stats.items():
        print(f'{osp.join(args.root, split)}: {counts["images"]} images, '
              f'{counts["objects"]} objects ({counts["difficult"]} difficult)')


if __name__ == '__main__':
    main()
