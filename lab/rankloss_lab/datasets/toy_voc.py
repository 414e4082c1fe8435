"""A small deterministic detection dataset written in the Pascal VOC layout.

The quickstart's and end-to-end tests' stand-in for VOC: drawn shapes with
VOC class names on noisy backgrounds with unlabelled distractors, about one
in ten small, faded and ``difficult``. Byte-identical for the same arguments.
"""
import os.path as osp
from typing import Dict, List, Tuple

import numpy as np

from .voc_writer import (add_class_flags, make_voc_dirs, write_image_sets,
                         write_voc_item)

#: Classes drawn by the generator; all are Pascal VOC class names, so the
#: stock 20-class ``VOCDataset`` metainfo reads them unchanged.
TOY_CLASSES = ('bottle', 'car', 'tvmonitor', 'sheep')

# Width / height range of each class's box.
_ASPECT = {'bottle': (0.35, 0.5), 'car': (1.7, 2.3), 'tvmonitor': (1.1, 1.4),
           'sheep': (1.25, 1.6)}
# Base colour of each class (RGB); every object jitters it.
_COLOUR = {'bottle': (40, 140, 60), 'car': (200, 40, 40),
           'tvmonitor': (40, 40, 50), 'sheep': (225, 225, 210)}
_SCREEN = (120, 190, 235)
_DARK = (25, 25, 25)


def _fill(img: np.ndarray, mask: np.ndarray, colour, alpha: float) -> None:
    """Blends ``colour`` into ``img`` where ``mask`` is true."""
    img[mask] = (1 - alpha) * img[mask] + alpha * np.asarray(colour, float)


def _rect(grid: Tuple[np.ndarray, np.ndarray], x0, y0, x1, y1) -> np.ndarray:
    xs, ys = grid
    return (xs >= x0) & (xs <= x1) & (ys >= y0) & (ys <= y1)


def _ellipse(grid: Tuple[np.ndarray, np.ndarray], x0, y0, x1, y1):
    xs, ys = grid
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    rx, ry = max((x1 - x0) / 2, 0.5), max((y1 - y0) / 2, 0.5)
    return ((xs - cx) / rx)**2 + ((ys - cy) / ry)**2 <= 1.0


def _draw(img, grid, name, box, colour, alpha) -> None:
    """Draws one ``name`` object touching all sides of inclusive ``box``."""
    x0, y0, x1, y1 = box
    w, h = x1 - x0, y1 - y0

    def rect(c, *corners):
        _fill(img, _rect(grid, *corners), c, alpha)

    def oval(c, *corners):
        _fill(img, _ellipse(grid, *corners), c, alpha)

    if name == 'bottle':
        rect(colour, x0, y0 + 0.4 * h, x1, y1)
        oval(colour, x0, y0 + 0.25 * h, x1, y0 + 0.55 * h)
        rect(colour, x0 + 0.3 * w, y0, x1 - 0.3 * w, y0 + 0.4 * h)
    elif name == 'car':
        rect(colour, x0, y0 + 0.3 * h, x1, y0 + 0.75 * h)
        rect(colour, x0 + 0.2 * w, y0, x0 + 0.75 * w, y0 + 0.35 * h)
        for cx in (0.25, 0.75):
            oval(_DARK, x0 + cx * w - 0.25 * h, y0 + 0.5 * h,
                 x0 + cx * w + 0.25 * h, y1)
    elif name == 'tvmonitor':
        rect(colour, x0, y0, x1, y1)
        rect(_SCREEN, x0 + 0.15 * w, y0 + 0.15 * h, x1 - 0.15 * w,
             y1 - 0.15 * h)
    elif name == 'sheep':
        for lx in (0.35, 0.8):
            rect(_DARK, x0 + lx * w - 0.04 * w, y0 + 0.6 * h,
                 x0 + lx * w + 0.04 * w, y1)
        oval(colour, x0 + 0.15 * w, y0, x1, y0 + 0.8 * h)
        oval(_DARK, x0, y0 + 0.15 * h, x0 + 0.3 * w, y0 + 0.5 * h)
    else:
        raise ValueError(f'unknown toy class {name!r}; known: {TOY_CLASSES}')


def _iou(a, b) -> float:
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) *
             (b[3] - b[1]) - inter)
    return inter / union if union > 0 else 0.0


def _background(rng: np.random.Generator, size: int) -> np.ndarray:
    """A smoothly shaded random background with pixel noise (H, W, 3)."""
    corners = rng.uniform(60, 200, size=(2, 2, 3))
    t = np.linspace(0, 1, size)[:, None, None]
    s = np.linspace(0, 1, size)[None, :, None]
    img = ((1 - t) * ((1 - s) * corners[0, 0] + s * corners[0, 1]) + t *
           ((1 - s) * corners[1, 0] + s * corners[1, 1]))
    return img + rng.normal(0, 12, size=(size, size, 3))


def _clutter(img, grid, rng: np.random.Generator, size: int) -> None:
    """Draws unlabelled distractors: plain discs and solid bars, which share
    colours and rough outlines with the objects but none of their parts."""
    for _ in range(int(rng.integers(0, 4))):
        w, h = rng.uniform(0.08, 0.35, size=2) * size
        x0, y0 = rng.uniform(0, size - w), rng.uniform(0, size - h)
        shape = _ellipse if rng.random() < 0.5 else _rect
        _fill(img, shape(grid, x0, y0, x0 + w, y0 + h),
              rng.uniform(0, 255, size=3), 1.0)


def sample_image(rng: np.random.Generator, size: int,
                  difficult_prob: float) -> Tuple[np.ndarray, List[dict]]:
    """Draws one image and returns it (uint8 RGB) with its objects."""
    img = _background(rng, size)
    grid = np.meshgrid(np.arange(size), np.arange(size))
    _clutter(img, grid, rng, size)
    objects: List[dict] = []
    for _ in range(int(rng.integers(1, 5))):
        name = TOY_CLASSES[int(rng.integers(len(TOY_CLASSES)))]
        difficult = bool(rng.random() < difficult_prob)
        box = _free_box(rng, size, name, difficult, objects)
        if box is None:
            continue
        alpha = 0.5 if difficult else 1.0
        _draw(img, grid, name, box, _object_colour(rng, name), alpha)
        objects.append(dict(name=name, box=box, difficult=difficult))
    return np.clip(img, 0, 255).round().astype(np.uint8), objects


def _free_box(rng: np.random.Generator, size: int, name: str,
              difficult: bool, objects: List[dict]):
    """A box of class ``name``'s aspect that overlaps no earlier object
    (IoU < 0.05), in 20 tries; None if there is none."""
    # long side: 10-16 % of the image for difficult objects, else 16-45 %
    lo, hi = (0.10, 0.16) if difficult else (0.16, 0.45)
    side = rng.uniform(lo, hi) * size
    aspect = rng.uniform(*_ASPECT[name])
    w, h = (side, side / aspect) if aspect >= 1 else (side * aspect, side)
    w, h = max(int(round(w)), 4), max(int(round(h)), 4)
    for _attempt in range(20):
        x0 = int(rng.integers(0, size - w))
        y0 = int(rng.integers(0, size - h))
        box = (x0, y0, x0 + w - 1, y0 + h - 1)
        if all(_iou(box, o['box']) < 0.05 for o in objects):
            return box
    return None


def _object_colour(rng: np.random.Generator, name: str) -> np.ndarray:
    """Half of the objects take their class's colour (jittered), the other
    half a random one, so the shape has to be learnt."""
    colour = (np.asarray(_COLOUR[name], float) + rng.uniform(-40, 40, size=3)
              if rng.random() < 0.5 else rng.uniform(0, 255, size=3))
    return np.clip(colour, 0, 255)


def make_toy_voc(root: str, num_trainval: int = 256, num_test: int = 64,
                 image_size: int = 128, seed: int = 0,
                 difficult_prob: float = 0.1, with_voc2012: bool = False,
                 num_val: int = 0) -> Dict[str, Dict[str, int]]:
    """Writes the toy dataset under ``root`` (a ``VOCdevkit``; files of the
    same names are overwritten): ``VOC2007`` ``trainval`` and ``test`` of
    ``num_trainval`` and ``num_test`` images, ``with_voc2012`` also a
    ``VOC2012`` ``trainval`` of ``num_trainval`` other images (the VOC07+12
    configs), and ``num_val`` images of a held-out ``VOC2007`` ``val`` for
    post-training fits (unlike VOC's, not in ``trainval``). An object is
    small, faded and ``difficult`` with chance ``difficult_prob``. Returns
    per split (``'VOC2007/trainval'``, ...) the number of ``images``,
    ``objects`` and ``difficult`` objects."""
    _check_toy_args(num_trainval, num_test, num_val, image_size,
                    difficult_prob)
    rng = np.random.default_rng(seed)
    stats: Dict[str, Dict[str, int]] = {}
    next_id = 1
    splits = [('VOC2007', 'trainval', num_trainval),
              ('VOC2007', 'test', num_test)]
    if with_voc2012:
        splits.append(('VOC2012', 'trainval', num_trainval))
    # val drawn last, so that the other splits stay the same
    for year, split, count in splits + [('VOC2007', 'val', num_val)]:
        if not count:
            continue
        ids = [f'{i:06d}' for i in range(next_id, next_id + count)]
        next_id += count
        stats[f'{year}/{split}'] = _write_toy_split(
            osp.join(root, year), split, ids, rng, image_size,
            difficult_prob)
    return stats


def _check_toy_args(num_trainval, num_test, num_val, image_size,
                    difficult_prob) -> None:
    for arg, value, minimum in (('num_trainval', num_trainval, 1),
                                ('num_test', num_test, 0),
                                ('num_val', num_val, 0),
                                ('image_size', image_size, 32)):
        if not isinstance(value, int) or value < minimum:
            raise ValueError(
                f'{arg} must be an int >= {minimum}, got {value!r}')
    if not 0.0 <= difficult_prob <= 1.0:
        raise ValueError(
            f'difficult_prob must be in [0, 1], got {difficult_prob!r}')


def _write_toy_split(year_root: str, split: str, ids: List[str],
                     rng: np.random.Generator, image_size: int,
                     difficult_prob: float) -> Dict[str, int]:
    """Draws and writes a split's images ``ids`` and lists; returns counts."""
    make_voc_dirs(year_root)
    per_class = {name: [] for name in TOY_CLASSES}
    n_objects = n_difficult = 0
    for img_id in ids:
        img, objects = sample_image(rng, image_size, difficult_prob)
        write_voc_item(year_root, img_id, img, objects,
                       'mmdet_rankloss toy VOC', quality=95)
        add_class_flags(per_class, img_id, objects)
        n_objects += len(objects)
        n_difficult += sum(o['difficult'] for o in objects)
    write_image_sets(year_root, split, ids, per_class)
    return dict(images=len(ids), objects=n_objects, difficult=n_difficult)
