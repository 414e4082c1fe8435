"""DigitsVOC: a detection benchmark of real handwritten digits, VOC layout.

What it draws and the split sizes: docs/evidence.md#digitsvoc; the masks
and COCO twin (``masks=True``, ids from 1 per split):
docs/instance_segmentation.md. The same arguments give byte-identical files.
"""
import os
import os.path as osp
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from mmdet_rankloss.ops.checks import check_flag
from .canvas import blend_mask, resize_patch, textured_background
from .coco_writer import coco_annotation, coco_categories, write_coco_json
from .voc_writer import (add_class_flags, make_voc_dirs, write_image_sets,
                         write_list, write_voc_item, write_voc_masks)

#: The ten classes, in label order (digit k has label k).
DIGIT_CLASSES = ('zero', 'one', 'two', 'three', 'four', 'five', 'six',
                 'seven', 'eight', 'nine')
#: Default split sizes (images).
DEFAULT_SPLITS = (('train', 384), ('val', 160), ('test', 320))
#: Share of the digit images reserved for each split's objects.
_POOL_SHARES = (('train', 0.6), ('val', 0.2), ('test', 0.2))
_CLASS_DECAY = 0.82


def _load_digits() -> Tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 digit images (float, 0..1) and their labels."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    return digits.images.astype(np.float64) / 16.0, digits.target


def _digit_pool_indices(seed: int) -> Dict[str, Dict[int, np.ndarray]]:
    """Disjoint digit image indices (into ``load_digits``) per split, class."""
    images, target = _load_digits()
    order = np.random.default_rng(seed + 7919).permutation(len(images))
    pools: Dict[str, Dict[int, np.ndarray]] = {}
    start = 0
    for index, (split, share) in enumerate(_POOL_SHARES):
        stop = (len(order) if index == len(_POOL_SHARES) - 1 else
                start + int(round(share * len(order))))
        chosen = order[start:stop]
        pools[split] = {k: chosen[target[chosen] == k]
                        for k in range(len(DIGIT_CLASSES))}
        start = stop
    return pools


def _digit_pools(seed: int) -> Dict[str, Dict[int, np.ndarray]]:
    """Disjoint sets of digit images (float, 0..1) per split and class."""
    images, _ = _load_digits()
    return {split: {k: images[idx] for k, idx in per_class.items()}
            for split, per_class in _digit_pool_indices(seed).items()}


class _RecordingPool:
    """A class's pool of digit images that records which ones are drawn
    (by their index into ``load_digits``); draws as the plain array."""

    def __init__(self, images: np.ndarray, indices: np.ndarray,
                 drawn: set) -> None:
        self.images, self.indices, self.drawn = images, indices, drawn

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> np.ndarray:
        self.drawn.add(int(self.indices[i]))
        return self.images[i]


def _contrasting_colour(rng: np.random.Generator, img: np.ndarray, x0: int,
                        y0: int, w: int, h: int) -> np.ndarray:
    """A random colour at least 70 grey levels away from the local mean."""
    size = img.shape[0]
    region = img[max(y0, 0):min(y0 + h, size), max(x0, 0):min(x0 + w, size)]
    local = region.reshape(-1, 3).mean(0) if region.size else np.full(3, 128.)
    for _ in range(20):
        colour = rng.uniform(0, 255, size=3)
        if np.abs(colour.mean() - local.mean()) >= 70:
            return colour
    return np.where(local > 127, 15.0, 240.0) * np.ones(3)


def _clutter(rng, img, pools) -> None:
    """Unlabelled strokes and fragments (at most 40 %) of other digits."""
    size = img.shape[0]
    for _ in range(int(rng.integers(0, 3))):
        k = int(rng.integers(len(DIGIT_CLASSES)))
        digit = pools[k][int(rng.integers(len(pools[k])))]
        # keep a band of 2 or 3 of the 8 rows or columns: a stroke piece
        start, width = int(rng.integers(0, 6)), int(rng.integers(2, 4))
        piece = digit[start:start + width] if rng.random() < 0.5 else \
            digit[:, start:start + width]
        side = rng.uniform(10, 40)
        scale = side / max(piece.shape)
        h = max(int(round(piece.shape[0] * scale)), 2)
        w = max(int(round(piece.shape[1] * scale)), 2)
        mask = resize_patch(piece, w, h)
        x0, y0 = int(rng.integers(-w // 2, size)), int(rng.integers(
            -h // 2, size))
        colour = _contrasting_colour(rng, img, x0, y0, w, h)
        blend_mask(img, mask * rng.uniform(0.5, 1.0), x0, y0, colour)
    for _ in range(int(rng.integers(0, 4))):
        # a straight stroke of 1 to 3 px
        length = rng.uniform(10, 50)
        angle = rng.uniform(0, np.pi)
        cx, cy = rng.uniform(0, size, size=2)
        ys, xs = np.mgrid[0:size, 0:size]
        along = (xs - cx) * np.cos(angle) + (ys - cy) * np.sin(angle)
        across = -(xs - cx) * np.sin(angle) + (ys - cy) * np.cos(angle)
        mask = ((np.abs(along) <= length / 2) &
                (np.abs(across) <= rng.uniform(0.5, 1.5))).astype(float)
        colour = _contrasting_colour(rng, img, int(cx), int(cy), 4, 4)
        blend_mask(img, mask, 0, 0, colour)


def _sample_image(rng: np.random.Generator, size: int,
                  pools: Dict[int, np.ndarray],
                  class_probs: np.ndarray) -> Tuple[np.ndarray, List[dict]]:
    """One image (uint8 RGB) and its objects (0-based inclusive boxes)."""
    img = textured_background(rng, size)
    _clutter(rng, img, pools)
    placed: List[Tuple[dict, np.ndarray]] = []  # (object, its visible ink)
    for _ in range(int(rng.integers(2, 6))):
        k = int(rng.choice(len(DIGIT_CLASSES), p=class_probs))
        digit = _ink_crop(pools[k][int(rng.integers(len(pools[k])))])
        painted = _paint_digit(rng, img, digit, DIGIT_CLASSES[k])
        if painted is None:
            continue
        obj, ink = painted
        for _, earlier in placed:  # this digit covers earlier ones
            earlier[ink] = 0
        placed.append((obj, ink.astype(float)))
    kept = [_labelled(obj, ink) for obj, ink in placed]
    return (np.clip(img, 0, 255).round().astype(np.uint8),
            [obj for obj in kept if obj is not None])


def _ink_crop(digit: np.ndarray) -> np.ndarray:
    """The digit image cut to the rows and columns that hold ink."""
    ink_rows = np.flatnonzero(digit.max(1) > 0.25)
    ink_cols = np.flatnonzero(digit.max(0) > 0.25)
    return digit[ink_rows[0]:ink_rows[-1] + 1, ink_cols[0]:ink_cols[-1] + 1]


def _paint_digit(rng: np.random.Generator, img: np.ndarray, digit: np.ndarray,
                 name: str) -> Optional[Tuple[dict, np.ndarray]]:
    """Paints the digit at a random size, aspect, contrast and place; its
    object (without box) and where its ink shows, or None when no ink
    lands in the image."""
    size = img.shape[0]
    side = float(np.exp(rng.uniform(np.log(14), np.log(60))))
    aspect = digit.shape[1] / digit.shape[0] * rng.uniform(0.8, 1.25)
    h = max(int(round(side if aspect <= 1 else side / aspect)), 6)
    w = max(int(round(side * aspect if aspect <= 1 else side)), 3)
    mask = resize_patch(digit, w, h)
    contrast = rng.uniform(0.25, 1.0) if rng.random() < 0.1 else \
        rng.uniform(0.75, 1.0)
    # up to a third of the digit may fall outside the image
    x0 = int(rng.integers(-w // 3, size - 2 * w // 3 + 1))
    y0 = int(rng.integers(-h // 3, size - 2 * h // 3 + 1))
    colour = _contrasting_colour(rng, img, x0, y0, w, h)
    painted = blend_mask(img, mask * contrast, x0, y0, colour)
    ink = painted > 0.25 * contrast
    if not ink.any():
        return None
    return dict(name=name, full_ink=float(np.count_nonzero(mask > 0.25)),
                side=max(w, h), contrast=contrast,
                truncated=bool(x0 < 0 or y0 < 0 or x0 + w > size
                               or y0 + h > size)), ink


def _labelled(obj: dict, ink: np.ndarray) -> Optional[dict]:
    """The object with the box of its visible ink, that ink as its
    ``mask`` ((H, W) bool) and its ``difficult`` flag; None when too little
    of it is visible for a box."""
    visible = ink > 0
    if not visible.any():
        return None
    rows, cols = np.flatnonzero(visible.any(1)), np.flatnonzero(
        visible.any(0))
    box = (int(cols[0]), int(rows[0]), int(cols[-1]), int(rows[-1]))
    if box[2] - box[0] < 2 or box[3] - box[1] < 2:
        return None
    shown = np.count_nonzero(visible) / max(obj['full_ink'], 1.0)
    obj.update(box=box, mask=visible,
               difficult=bool(obj['side'] < 18 or obj['contrast'] < 0.35
                              or shown < 0.5))
    return obj


def _class_probs() -> np.ndarray:
    probs = _CLASS_DECAY**np.arange(len(DIGIT_CLASSES))
    return probs / probs.sum()


def _split_rng(seed: int, split_index: int, count: int) -> np.random.Generator:
    """One generator per split (test images independent of the train count)."""
    return np.random.default_rng([seed, split_index, count])


def _write_split(year_root: Optional[str], split: str, count: int,
                 rng: np.random.Generator, image_size: int,
                 pools: Dict[int, np.ndarray], probs: np.ndarray
                 ) -> Tuple[dict, List[str], Dict[str, List[str]],
                            List[List[dict]]]:
    """Draws ``count`` images ``<split>_<index>`` and writes their JPEG and
    XML files under ``year_root`` (None: draws only); returns the split's
    counts, image ids, per-class lines and each image's objects."""
    ids, per_class, drawn = [], {name: [] for name in DIGIT_CLASSES}, []
    for index in range(count):
        img_id = f'{split}_{index:05d}'
        img, objects = _sample_image(rng, image_size, pools, probs)
        if year_root is not None:
            write_voc_item(year_root, img_id, img, objects,
                           'mmdet_rankloss DigitsVOC', quality=92)
        ids.append(img_id)
        add_class_flags(per_class, img_id, objects)
        drawn.append(objects)
    return _split_counts(drawn), ids, per_class, drawn


def _write_masks(root: str, split: str, ids: Sequence[str],
                 drawn: Sequence[Sequence[dict]], image_size: int) -> None:
    """The masks of a split's images: their segmentation PNGs and the COCO
    twin ``<root>/annotations/instances_<split>.json``."""
    images, annotations = [], []
    for index, (img_id, objects) in enumerate(zip(ids, drawn), 1):
        write_voc_masks(osp.join(root, 'VOC2007'), img_id, image_size,
                        objects, DIGIT_CLASSES)
        images.append(dict(id=index, file_name=f'{img_id}.jpg',
                           width=image_size, height=image_size))
        for obj in objects:
            annotations.append(coco_annotation(
                len(annotations) + 1, index,
                DIGIT_CLASSES.index(obj['name']) + 1, obj['box'],
                mask=obj['mask'], iscrowd=obj['difficult']))
    os.makedirs(osp.join(root, 'annotations'), exist_ok=True)
    write_coco_json(osp.join(root, 'annotations', f'instances_{split}.json'),
                    images, annotations,
                    coco_categories(DIGIT_CLASSES, 'digit'))


def _write_split_lists(root: str, split: str, ids: Sequence[str],
                       per_class: Dict[str, List[str]], masks: bool) -> None:
    """A split's lists under ``ImageSets/Main`` (and ``Segmentation``)."""
    year_root = osp.join(root, 'VOC2007')
    write_image_sets(year_root, split, ids, per_class)
    if masks:
        write_list(osp.join(year_root, 'ImageSets', 'Segmentation',
                            f'{split}.txt'), ids)


def _split_counts(drawn: List[List[dict]]) -> dict:
    """``images``, ``objects``, ``difficult``, ``truncated`` and per-class
    ``counts`` of a split, from each image's objects."""
    objects = [o for image in drawn for o in image]
    class_counts = [0] * len(DIGIT_CLASSES)
    for o in objects:
        class_counts[DIGIT_CLASSES.index(o['name'])] += 1
    return dict(images=len(drawn), objects=len(objects),
                difficult=sum(o['difficult'] for o in objects),
                truncated=sum(o['truncated'] for o in objects),
                counts=class_counts)


def _check_args(splits: Sequence[Tuple[str, int]], image_size: int) -> None:
    names = [name for name, _ in splits]
    if not names or len(set(names)) != len(names) or not set(names) <= {
            'train', 'val', 'test'}:
        raise ValueError('splits must name each of train, val, test at most '
                         f'once, got {names}')
    for name, count in splits:
        _check_count(f'split {name!r}: the number of images', count)
    _check_count('image_size', image_size, 64)


def _check_count(what: str, count: int, minimum: int = 1) -> None:
    if isinstance(count, bool) or not isinstance(count,
                                                 int) or count < minimum:
        raise ValueError(f'{what} must be an int >= {minimum}, got {count!r}')


def make_digits_voc(root: str,
                    splits: Sequence[Tuple[str, int]] = DEFAULT_SPLITS,
                    image_size: int = 128, seed: int = 0,
                    masks: bool = False) -> Dict[str, Dict[str, int]]:
    """Writes the DigitsVOC benchmark under ``root`` (a ``VOCdevkit``;
    ``VOC2007`` is created inside it) and returns per split the number of
    ``images``, ``objects``, ``difficult`` and ``truncated`` objects and
    per-class ``counts``. ``splits``: ``(name, images)`` of ``train``,
    ``val`` and ``test`` (any order, each once, >= 1; ``trainval`` is train
    + val); ``image_size``: the square images' side, >= 64; ``masks``: also
    the instance masks (PNGs and COCO twin), the other files the same."""
    _check_args(splits, image_size)
    masks = check_flag('make_digits_voc', 'masks', masks)
    pools = _digit_pools(seed)
    year_root = osp.join(root, 'VOC2007')
    make_voc_dirs(year_root, segmentation=masks)
    stats: Dict[str, Dict[str, int]] = {}
    lists: Dict[str, List[str]] = {}
    flags: Dict[str, Dict[str, List[str]]] = {}
    for split_index, (split, count) in enumerate(splits):
        stats[split], lists[split], flags[split], drawn = _write_split(
            year_root, split, count, _split_rng(seed, split_index, count),
            image_size, pools[split], _class_probs())
        if masks:
            _write_masks(root, split, lists[split], drawn, image_size)
    if 'train' in lists and 'val' in lists:  # trainval = train + val
        lists['trainval'] = lists['train'] + lists['val']
        flags['trainval'] = {name: flags['train'][name] + flags['val'][name]
                             for name in DIGIT_CLASSES}
    for split, ids in lists.items():
        _write_split_lists(root, split, ids, flags[split], masks)
    return stats


def used_digit_images(splits: Sequence[Tuple[str, int]] = DEFAULT_SPLITS,
                      image_size: int = 128, seed: int = 0) -> np.ndarray:
    """Indices (into ``load_digits``) of the digit images that the splits
    ``make_digits_voc(root, splits, image_size, seed)`` writes draw, as an
    object or as clutter: the generation replayed, nothing written."""
    _check_args(splits, image_size)
    images, _ = _load_digits()
    indices = _digit_pool_indices(seed)
    drawn: set = set()
    for split_index, (split, count) in enumerate(splits):
        pools = {k: _RecordingPool(images[idx], idx, drawn)
                 for k, idx in indices[split].items()}
        _write_split(None, split, count, _split_rng(seed, split_index, count),
                     image_size, pools, _class_probs())
    return np.array(sorted(drawn), dtype=np.int64)


def make_fresh_test_split(root: str, name: str = 'confirm', count: int = 320,
                          fresh_seed: int = 1,
                          splits: Sequence[Tuple[str, int]] = DEFAULT_SPLITS,
                          image_size: int = 128, seed: int = 0,
                          masks: bool = False) -> Dict[str, object]:
    """Writes only the files of a fresh test split ``name`` beside the
    DigitsVOC splits: images ``<name>_<index>`` from the synthesis seed
    ``fresh_seed`` and only from digit images no existing split draws
    (:func:`used_digit_images` with the arguments those splits were written
    with). Returns its counts (as :func:`make_digits_voc`) and
    ``digit_images``, the free digit images per class."""
    if not isinstance(name, str) or not name.isidentifier() or name in (
            'train', 'val', 'trainval', 'test'):
        raise ValueError('the fresh split needs a new name (letters, '
                         'digits, _), not one of train, val, trainval, test: '
                         f'{name!r}')
    _check_count('count', count)
    masks = check_flag('make_fresh_test_split', 'masks', masks)
    pools = _free_digit_pools(splits, image_size, seed)
    year_root = osp.join(root, 'VOC2007')
    make_voc_dirs(year_root, segmentation=masks)
    # position 3: a generator no existing split (0, 1, 2) uses, whatever
    # fresh_seed is
    rng = np.random.default_rng([fresh_seed, 3, count])
    counts, ids, per_class, drawn = _write_split(
        year_root, name, count, rng, image_size, pools, _class_probs())
    _write_split_lists(root, name, ids, per_class, masks)
    if masks:
        _write_masks(root, name, ids, drawn, image_size)
    counts['digit_images'] = [len(pools[k]) for k in range(len(DIGIT_CLASSES))]
    return counts


def _free_digit_pools(splits: Sequence[Tuple[str, int]], image_size: int,
                      seed: int) -> Dict[int, np.ndarray]:
    """Per class, the digit images that none of the splits draws."""
    images, target = _load_digits()
    used = set(used_digit_images(splits, image_size, seed).tolist())
    free = np.array([i for i in range(len(images)) if i not in used],
                    dtype=np.int64)
    pools = {k: images[free[target[free] == k]]
             for k in range(len(DIGIT_CLASSES))}
    empty = [DIGIT_CLASSES[k] for k, pool in pools.items() if not len(pool)]
    if empty:  # not the case for the default splits
        raise ValueError(f'every digit image of class {empty} is used by the '
                         'existing splits: no fresh split of unseen digits')
    return pools
