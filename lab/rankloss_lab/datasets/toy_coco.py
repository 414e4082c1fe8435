"""The toy detection set of :mod:`.toy_voc`, written in the COCO format.

A stand-in for a user's COCO-format data (docs/own_data.md):
``<root>/images/<id>.jpg`` and ``<root>/annotations/<split>.json`` (bbox
[x, y, w, h], area, iscrowd 0). Categories are :data:`~.toy_voc.
TOY_CLASSES` with the non-contiguous ids :data:`TOY_CATEGORY_IDS`, so a
reader must map ids to labels; nothing is ``difficult``. The same arguments
always give byte-identical files.
"""
import os
import os.path as osp
from typing import Dict, List, Sequence, Tuple

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
    """Writes the toy set in the COCO format under ``root``.

    Args:
        root (str): Output directory (``images/`` and ``annotations/``).
        splits (Sequence[tuple[str, int]]): ``(name, images)`` per split, to
            ``annotations/<name>.json``; ids and file names run on across
            splits. Defaults to 16 train and 8 val images.
        image_size (int): Side of the square images. Defaults to 128.
        seed (int): Generator seed. Defaults to 0.

    Returns:
        dict: Per split, the number of ``images`` and ``objects``.
    """
    if not splits or any(not isinstance(n, int) or n < 1 for _, n in splits):
        raise ValueError('splits must be (name, images >= 1) pairs, got '
                         f'{splits!r}')
    if not isinstance(image_size, int) or image_size < 32:
        raise ValueError(f'image_size must be an int >= 32, got '
                         f'{image_size!r}')
    os.makedirs(osp.join(root, 'images'), exist_ok=True)
    os.makedirs(osp.join(root, 'annotations'), exist_ok=True)
    rng = np.random.default_rng(seed)
    categories = [dict(id=i, name=name, supercategory='shape')
                  for i, name in zip(TOY_CATEGORY_IDS, TOY_CLASSES)]
    stats = {}
    next_img, next_ann = 1, 1
    for split, count in splits:
        images: List[dict] = []
        annotations: List[dict] = []
        for _ in range(count):
            img, objects = sample_image(rng, image_size, 0.0)
            name = f'{next_img:06d}.jpg'
            _save_jpeg(img, osp.join(root, 'images', name))
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


def _save_jpeg(img: np.ndarray, path: str) -> None:
    from PIL import Image
    Image.fromarray(img).save(path, quality=95)
