"""The toy detection set of :mod:`.toy_voc`, written in the COCO format: a
stand-in for a user's COCO-format data (docs/own_data.md), its category ids
non-contiguous (:data:`TOY_CATEGORY_IDS`). Byte-identical for the same
arguments.
"""
import os
import os.path as osp
from typing import Dict, Sequence, Tuple

import numpy as np

from .coco_writer import coco_annotation, write_coco_json
from .toy_voc import TOY_CLASSES, sample_image

__all__ = ['TOY_CATEGORY_IDS', 'make_toy_coco']

#: COCO category id of each toy class, in the order of ``TOY_CLASSES``.
TOY_CATEGORY_IDS = (1, 3, 4, 7)


def make_toy_coco(root: str,
                  splits: Sequence[Tuple[str, int]] = (('train', 16),
                                                       ('val', 8)),
                  image_size: int = 128,
                  seed: int = 0) -> Dict[str, Dict[str, int]]:
    """Writes the toy set in the COCO format under ``root``
    (``images/<id>.jpg``, ``annotations/<split>.json``), for ``splits``
    ``(name, images)`` (ids run on across splits); returns per split the
    number of ``images`` and ``objects``."""
    if not splits or any(not isinstance(n, int) or n < 1 for _, n in splits):
        raise ValueError('splits must be (name, images >= 1) pairs, got '
                         f'{splits!r}')
    if not isinstance(image_size, int) or image_size < 32:
        raise ValueError(f'image_size must be an int >= 32, got '
                         f'{image_size!r}')
    for sub in ('images', 'annotations'):
        os.makedirs(osp.join(root, sub), exist_ok=True)
    from PIL import Image
    rng = np.random.default_rng(seed)
    categories = [dict(id=i, name=name, supercategory='shape')
                  for i, name in zip(TOY_CATEGORY_IDS, TOY_CLASSES)]
    stats, next_img, next_ann = {}, 1, 1
    for split, count in splits:
        images, annotations = [], []
        for _ in range(count):
            img, objects = sample_image(rng, image_size, 0.0)
            name = f'{next_img:06d}.jpg'
            Image.fromarray(img).save(osp.join(root, 'images', name),
                                      quality=95)
            images.append(dict(id=next_img, file_name=name,
                               width=image_size, height=image_size))
            for obj in objects:
                annotations.append(coco_annotation(
                    next_ann, next_img,
                    TOY_CATEGORY_IDS[TOY_CLASSES.index(obj['name'])],
                    obj['box']))
                next_ann += 1
            next_img += 1
        write_coco_json(osp.join(root, 'annotations', f'{split}.json'),
                        images, annotations, categories)
        stats[split] = dict(images=len(images), objects=len(annotations))
    return stats
