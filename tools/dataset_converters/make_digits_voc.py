#!/usr/bin/env python
"""Writes the DigitsVOC detection benchmark in the Pascal VOC2007 layout.

    python tools/dataset_converters/make_digits_voc.py [ROOT] [--masks]
    python tools/dataset_converters/make_digits_voc.py [ROOT] \
        --fresh-test confirm [--fresh-test-images 320]

ROOT defaults to ``data/digits_voc/VOCdevkit`` (see
:mod:`rankloss_lab.datasets.digits_voc`). ``--preview``: the first 8 train
images with boxes (red; difficult: yellow). ``--fresh-test NAME`` writes
only a fresh split; keep the split options and ``--seed`` as written.
"""
import argparse
import os
import os.path as osp

from rankloss_lab.datasets.digits_voc import (DEFAULT_SPLITS, make_digits_voc,
                                              make_fresh_test_split)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('root', nargs='?', default='data/digits_voc/VOCdevkit',
                        help='VOCdevkit directory to write (default: '
                        '%(default)s)')
    defaults = dict(DEFAULT_SPLITS)
    for split in ('train', 'val', 'test'):
        parser.add_argument(f'--{split}', type=int, default=defaults[split],
                            help=f'images in {split} (default: %(default)s)')
    parser.add_argument('--image-size', type=int, default=128)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--preview', help='PNG of 8 annotated train images')
    parser.add_argument('--masks', action='store_true',
                        help='also write instance masks: VOC segmentation '
                        'PNGs and the COCO twin annotations/'
                        'instances_<split>.json')
    parser.add_argument('--fresh-test', metavar='NAME',
                        help='write only a fresh test split NAME (new '
                        'synthesis seed, digit images no existing split '
                        'draws) beside the existing splits')
    parser.add_argument('--fresh-test-images', type=int, default=320,
                        help='images in the fresh split (default: '
                        '%(default)s)')
    parser.add_argument('--fresh-test-seed', type=int, default=1,
                        help='synthesis seed of the fresh split (default: '
                        '%(default)s)')
    args = parser.parse_args(argv)
    splits = [(s, getattr(args, s)) for s in ('train', 'val', 'test')]
    if args.fresh_test:
        c = make_fresh_test_split(
            args.root, args.fresh_test, args.fresh_test_images,
            args.fresh_test_seed, splits=splits,
            image_size=args.image_size, seed=args.seed, masks=args.masks)
        print(f'{args.fresh_test}: {c["images"]} images, {c["objects"]} '
              f'objects ({c["difficult"]} difficult, {c["truncated"]} '
              f'truncated), per class {c["counts"]}; drawn from '
              f'{sum(c["digit_images"])} digit images no other split draws, '
              f'per class {c["digit_images"]}')
        print(f'written to {osp.join(args.root, "VOC2007")}')
        return
    stats = make_digits_voc(args.root, splits=splits,
                            image_size=args.image_size, seed=args.seed,
                            masks=args.masks)
    for split, c in stats.items():
        print(f'{split}: {c["images"]} images, {c["objects"]} objects '
              f'({c["difficult"]} difficult, {c["truncated"]} truncated), '
              f'per class {c["counts"]}')
    print(f'written to {osp.join(args.root, "VOC2007")}')
    if args.preview:
        draw_preview(osp.join(args.root, 'VOC2007'), args.preview)
        print(f'preview: {args.preview}')


def draw_preview(year_root: str, path: str, count: int = 8,
                 zoom: int = 2) -> None:
    """The first ``count`` train images, enlarged, with their boxes read
    back from the XML files."""
    from xml.etree import ElementTree as ET

    from PIL import Image, ImageDraw
    with open(osp.join(year_root, 'ImageSets', 'Main', 'train.txt')) as f:
        ids = f.read().split()[:count]
    tiles = []
    for img_id in ids:
        img = Image.open(osp.join(year_root, 'JPEGImages', f'{img_id}.jpg'))
        img = img.resize((img.width * zoom, img.height * zoom),
                         Image.NEAREST)
        draw = ImageDraw.Draw(img)
        tree = ET.parse(osp.join(year_root, 'Annotations', f'{img_id}.xml'))
        for obj in tree.findall('object'):
            box = [(int(obj.findtext(f'bndbox/{k}')) - 1) * zoom
                   for k in ('xmin', 'ymin', 'xmax', 'ymax')]
            colour = 'yellow' if obj.findtext('difficult') == '1' else 'red'
            draw.rectangle(box, outline=colour, width=2)
            draw.text((box[0] + 2, box[1] + 1), obj.findtext('name'),
                      fill=colour)
        tiles.append(img)
    cols, (w, h) = 4, tiles[0].size
    rows = (len(tiles) + cols - 1) // cols
    sheet = Image.new('RGB', (cols * w, rows * h), 'white')
    for i, tile in enumerate(tiles):
        sheet.paste(tile, ((i % cols) * w, (i // cols) * h))
    os.makedirs(osp.dirname(osp.abspath(path)), exist_ok=True)
    sheet.save(path)


if __name__ == '__main__':
    main()
