"""DigitsVOC: a detection benchmark of real handwritten digits, VOC layout.

The drawn-shapes toy set (:mod:`.toy_voc`) saturates (cross-entropy reaches
85 AP50) and hides how slowly a loss trains. This benchmark is built from
real image content that ships with a package the project already depends
on: the 1,797 handwritten digits of scikit-learn's ``load_digits`` (UCI
optical recognition of handwritten digits, 8 x 8 px, 16 grey levels). The
digit images are split three ways (60 / 20 / 20 %, at random; the data set
does not name its writers), so train, val and test share no digit image.
Each picture is 128 x 128 px and holds 2 to 5 digits that:

* vary in scale (long side 14 to 60 px) and aspect, in stroke colour and
  contrast;
* lie on textured backgrounds: a colour gradient, a sinusoidal grating of
  random frequency and orientation, low-frequency noise, and unlabelled
  clutter made of strokes and *fragments of other digits* (so "ink" alone
  does not mean "object");
* overlap (a later digit may cover up to about half of an earlier one) and
  are cut by the image border (``truncated`` = 1);
* are imbalanced: class ``k`` is drawn with probability proportional to
  ``0.82 ** k`` (``zero`` about 5.9 times as often as ``nine``);
* are flagged ``difficult`` when small (long side under 18 px), faint
  (contrast under 0.35) or mostly hidden (less than half visible), and are
  then ignored by ``VOCMetric``, as in VOC.

What is written under ``<root>/VOC2007``, exactly the VOC2007 layout, so
MMDetection's own ``VOCDataset`` reads it and ``VOCMetric`` (AP50) scores it::

    JPEGImages/<id>.jpg        Annotations/<id>.xml
    ImageSets/Main/{train,val,trainval,test}.txt
    ImageSets/Main/<class>_<split>.txt

Class names are ``DIGIT_CLASSES`` (``'zero'`` ... ``'nine'``); configs pass
them as the dataset's ``metainfo``. Hyper-parameters are chosen on ``val``;
``test`` is reported once. The same arguments always give byte-identical
files.

A fresh test split for confirmation runs (:func:`make_fresh_test_split`):
a new split list beside the others (e.g. ``ImageSets/Main/confirm.txt``,
images ``confirm_*``) from a new synthesis seed, drawing only digit images
that none of train, val and test draws. It writes no file of the existing
splits.
"""
import os
import os.path as osp
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .toy_voc import _add_class_flags, _annotation_xml, _write_image_sets

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
    """Disjoint sets of digit image indices (into ``load_digits``) per
    split and class."""
    images, target = _load_digits()
    order = np.random.default_rng(seed + 7919).permutation(len(images))
    pools: Dict[str, Dict[int, np.ndarray]] = {}
    start = 0
    for index, (split, share) in enumerate(_POOL_SHARES):
        stop = (len(order) if index == len(_POOL_SHARES) - 1 else
                start + int(round(share * len(order))))
        chosen = order[start:stop]
        pools[split] = {
            k: chosen[target[chosen] == k]
            for k in range(len(DIGIT_CLASSES))
        }
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


def _resize(patch: np.ndarray, width: int, height: int) -> np.ndarray:
    """Bicubic resize of a float image in [0, 1] to (height, width)."""
    from PIL import Image
    img = Image.fromarray(np.uint8(np.clip(patch, 0, 1) * 255))
    out = img.resize((width, height), Image.BICUBIC)
    return np.asarray(out, dtype=np.float64) / 255.0


def _background(rng: np.random.Generator, size: int) -> np.ndarray:
    """Gradient + grating + low-frequency noise, (H, W, 3) floats 0..255."""
    ys, xs = np.mgrid[0:size, 0:size] / size
    corners = rng.uniform(40, 215, size=(2, 2, 3))
    t, s = ys[..., None], xs[..., None]
    img = ((1 - t) * ((1 - s) * corners[0, 0] + s * corners[0, 1]) + t *
           ((1 - s) * corners[1, 0] + s * corners[1, 1]))
    angle = rng.uniform(0, np.pi)
    freq = rng.uniform(3, 14)
    grating = np.sin(2 * np.pi * freq *
                     (np.cos(angle) * xs + np.sin(angle) * ys) +
                     rng.uniform(0, 2 * np.pi))
    img += grating[..., None] * rng.uniform(0, 25) * rng.uniform(
        0.5, 1, size=3)
    coarse = rng.normal(0, 1, size=(9, 9, 3))
    noise = np.stack(
        [_resize((coarse[..., c] + 3) / 6, size, size) * 6 - 3
         for c in range(3)], -1)
    img += noise * rng.uniform(5, 25)
    return img + rng.normal(0, 6, size=img.shape)


def _blend(img: np.ndarray, mask: np.ndarray, x0: int, y0: int,
           colour: np.ndarray) -> np.ndarray:
    """Alpha-blends ``colour`` through ``mask`` at (x0, y0), clipped to the
    image; returns the mask of the pixels that were painted (image-sized)."""
    size = img.shape[0]
    h, w = mask.shape
    xa, ya = max(x0, 0), max(y0, 0)
    xb, yb = min(x0 + w, size), min(y0 + h, size)
    painted = np.zeros((size, size))
    if xa >= xb or ya >= yb:
        return painted
    sub = mask[ya - y0:yb - y0, xa - x0:xb - x0]
    region = img[ya:yb, xa:xb]
    region[:] = (1 - sub[..., None]) * region + sub[..., None] * colour
    painted[ya:yb, xa:xb] = sub
    return painted


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
        mask = _resize(piece, w, h)
        x0, y0 = int(rng.integers(-w // 2, size)), int(rng.integers(
            -h // 2, size))
        colour = _contrasting_colour(rng, img, x0, y0, w, h)
        _blend(img, mask * rng.uniform(0.5, 1.0), x0, y0, colour)
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
        _blend(img, mask, 0, 0, colour)


def _sample_image(rng: np.random.Generator, size: int,
                  pools: Dict[int, np.ndarray],
                  class_probs: np.ndarray) -> Tuple[np.ndarray, List[dict]]:
    """One image (uint8 RGB) and its objects (0-based inclusive boxes)."""
    img = _background(rng, size)
    _clutter(rng, img, pools)
    placed: List[Tuple[int, np.ndarray]] = []  # (index, painted mask)
    objects: List[dict] = []
    for _ in range(int(rng.integers(2, 6))):
        k = int(rng.choice(len(DIGIT_CLASSES), p=class_probs))
        digit = pools[k][int(rng.integers(len(pools[k])))]
        ink_rows = np.flatnonzero(digit.max(1) > 0.25)
        ink_cols = np.flatnonzero(digit.max(0) > 0.25)
        digit = digit[ink_rows[0]:ink_rows[-1] + 1,
                      ink_cols[0]:ink_cols[-1] + 1]
        side = float(np.exp(rng.uniform(np.log(14), np.log(60))))
        aspect = digit.shape[1] / digit.shape[0] * rng.uniform(0.8, 1.25)
        h = max(int(round(side if aspect <= 1 else side / aspect)), 6)
        w = max(int(round(side * aspect if aspect <= 1 else side)), 3)
        mask = _resize(digit, w, h)
        contrast = rng.uniform(0.25, 1.0) if rng.random() < 0.1 else \
            rng.uniform(0.75, 1.0)
        # up to a third of the digit may fall outside the image
        x0 = int(rng.integers(-w // 3, size - 2 * w // 3 + 1))
        y0 = int(rng.integers(-h // 3, size - 2 * h // 3 + 1))
        colour = _contrasting_colour(rng, img, x0, y0, w, h)
        painted = _blend(img, mask * contrast, x0, y0, colour)
        ink = painted > 0.25 * contrast
        if not ink.any():
            continue
        for index, earlier in placed:  # this digit covers earlier ones
            earlier[ink] = 0
        placed.append((len(objects), ink.astype(float)))
        objects.append(
            dict(
                name=DIGIT_CLASSES[k],
                full_ink=float(np.count_nonzero(mask > 0.25)),
                side=max(w, h),
                contrast=contrast,
                truncated=bool(x0 < 0 or y0 < 0 or x0 + w > size
                               or y0 + h > size)))
    kept = []
    for index, ink in placed:
        obj = objects[index]
        visible = ink > 0
        if not visible.any():
            continue
        rows, cols = np.flatnonzero(visible.any(1)), np.flatnonzero(
            visible.any(0))
        box = (int(cols[0]), int(rows[0]), int(cols[-1]), int(rows[-1]))
        if box[2] - box[0] < 2 or box[3] - box[1] < 2:
            continue
        shown = np.count_nonzero(visible) / max(obj['full_ink'], 1.0)
        obj.update(
            box=box,
            difficult=bool(obj['side'] < 18 or obj['contrast'] < 0.35
                           or shown < 0.5))
        kept.append(obj)
    return np.clip(img, 0, 255).round().astype(np.uint8), kept


def _class_probs() -> np.ndarray:
    probs = _CLASS_DECAY**np.arange(len(DIGIT_CLASSES))
    return probs / probs.sum()


def _write_split(year_root: Optional[str], split: str, count: int,
                 rng: np.random.Generator, image_size: int,
                 pools: Dict[int, np.ndarray], probs: np.ndarray
                 ) -> Tuple[dict, List[str], Dict[str, List[str]]]:
    """Draws ``count`` images ``<split>_<index>`` and writes their JPEG and
    XML files under ``year_root`` (None: draws only, writes nothing).

    Returns the split's counts, its image ids and its per-class lines.
    """
    from PIL import Image
    ids, per_class = [], {name: [] for name in DIGIT_CLASSES}
    counts = dict(images=count, objects=0, difficult=0, truncated=0)
    class_counts = [0] * len(DIGIT_CLASSES)
    for index in range(count):
        img_id = f'{split}_{index:05d}'
        img, objects = _sample_image(rng, image_size, pools, probs)
        if year_root is not None:
            Image.fromarray(img).save(
                osp.join(year_root, 'JPEGImages', f'{img_id}.jpg'),
                quality=92)
            _annotation_xml(
                img_id, 'VOC2007', image_size, objects,
                database='mmdet_rankloss DigitsVOC').write(
                    osp.join(year_root, 'Annotations', f'{img_id}.xml'))
        ids.append(img_id)
        _add_class_flags(per_class, img_id, objects)
        counts['objects'] += len(objects)
        counts['difficult'] += sum(o['difficult'] for o in objects)
        counts['truncated'] += sum(o['truncated'] for o in objects)
        for o in objects:
            class_counts[DIGIT_CLASSES.index(o['name'])] += 1
    counts['counts'] = class_counts
    return counts, ids, per_class


def _check_args(splits: Sequence[Tuple[str, int]], image_size: int) -> None:
    names = [name for name, _ in splits]
    if not names or len(set(names)) != len(names) or not set(names) <= {
            'train', 'val', 'test'}:
        raise ValueError('splits must name each of train, val, test at most '
                         f'once, got {names}')
    for name, count in splits:
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f'split {name!r}: the number of images must be '
                             f'an int >= 1, got {count!r}')
    if isinstance(image_size, bool) or not isinstance(image_size,
                                                      int) or image_size < 64:
        raise ValueError(f'image_size must be an int >= 64, got '
                         f'{image_size!r}')


def make_digits_voc(root: str,
                    splits: Sequence[Tuple[str, int]] = DEFAULT_SPLITS,
                    image_size: int = 128,
                    seed: int = 0) -> Dict[str, Dict[str, int]]:
    """Writes the DigitsVOC benchmark under ``root`` (a ``VOCdevkit``).

    Args:
        root (str): Output directory; ``VOC2007`` is created inside it.
        splits (sequence): ``(name, number of images)`` for ``train``,
            ``val`` and ``test`` (in any order, each at most once, counts
            >= 1). ``trainval`` is written as train + val.
            Defaults to 384 / 160 / 320 images.
        image_size (int): Side of the square images, >= 64. Defaults to 128.
        seed (int): Generator seed. Defaults to 0.

    Returns:
        dict: Per split, the number of ``images``, ``objects``,
        ``difficult`` and ``truncated`` objects and per-class ``counts``.
    """
    _check_args(splits, image_size)
    pools = _digit_pools(seed)
    probs = _class_probs()
    year_root = osp.join(root, 'VOC2007')
    for sub in ('JPEGImages', 'Annotations', 'ImageSets/Main'):
        os.makedirs(osp.join(year_root, sub), exist_ok=True)
    main = osp.join(year_root, 'ImageSets', 'Main')
    stats: Dict[str, Dict[str, int]] = {}
    lists: Dict[str, List[str]] = {}
    flags: Dict[str, Dict[str, List[str]]] = {}
    for split_index, (split, count) in enumerate(splits):
        # one generator per split: the test images do not depend on how many
        # train images were asked for
        rng = np.random.default_rng([seed, split_index, count])
        stats[split], lists[split], flags[split] = _write_split(
            year_root, split, count, rng, image_size, pools[split], probs)
    if 'train' in lists and 'val' in lists:
        lists['trainval'] = lists['train'] + lists['val']
        flags['trainval'] = {
            name: flags['train'][name] + flags['val'][name]
            for name in DIGIT_CLASSES
        }
    for split, ids in lists.items():
        _write_image_sets(main, split, ids, flags[split])
    return stats


def used_digit_images(splits: Sequence[Tuple[str, int]] = DEFAULT_SPLITS,
                      image_size: int = 128, seed: int = 0) -> np.ndarray:
    """Indices (into ``load_digits``) of the digit images that the splits
    ``make_digits_voc(root, splits, image_size, seed)`` writes draw, as an
    object or as clutter: the generation replayed, nothing written."""
    _check_args(splits, image_size)
    images, _ = _load_digits()
    indices = _digit_pool_indices(seed)
    probs = _class_probs()
    drawn: set = set()
    for split_index, (split, count) in enumerate(splits):
        rng = np.random.default_rng([seed, split_index, count])
        pools = {k: _RecordingPool(images[idx], idx, drawn)
                 for k, idx in indices[split].items()}
        _write_split(None, split, count, rng, image_size, pools, probs)
    return np.array(sorted(drawn), dtype=np.int64)


def make_fresh_test_split(root: str,
                          name: str = 'confirm',
                          count: int = 320,
                          fresh_seed: int = 1,
                          splits: Sequence[Tuple[str, int]] = DEFAULT_SPLITS,
                          image_size: int = 128,
                          seed: int = 0) -> Dict[str, object]:
    """Writes a fresh test split ``name`` beside the DigitsVOC splits.

    The images ``<name>_<index>`` are drawn from the synthesis seed
    ``fresh_seed`` (its own generator: backgrounds, clutter, placement and
    colours are new) and only from the digit images that none of the
    existing splits draws (``used_digit_images(splits, image_size, seed)``,
    the arguments the existing splits were written with): no digit image of
    the fresh split is in train, val or test. With the default splits 342 of
    the 1,797 digit images are free, 7 to 78 per class. Only the files of
    ``name`` are written (``JPEGImages/<name>_*.jpg``, ``Annotations``,
    ``ImageSets/Main/<name>.txt`` and ``<class>_<name>.txt``); the existing
    splits are not touched. Deterministic, like :func:`make_digits_voc`.

    Returns:
        dict: the split's counts (as :func:`make_digits_voc`) and
        ``digit_images``: the free digit images per class.
    """
    if not isinstance(name, str) or not name.isidentifier() or name in (
            'train', 'val', 'trainval', 'test'):
        raise ValueError('the fresh split needs a new name (letters, '
                         'digits, _), not one of train, val, trainval, test: '
                         f'{name!r}')
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f'count must be an int >= 1, got {count!r}')
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
    year_root = osp.join(root, 'VOC2007')
    for sub in ('JPEGImages', 'Annotations', 'ImageSets/Main'):
        os.makedirs(osp.join(year_root, sub), exist_ok=True)
    # position 3: a generator no existing split (0, 1, 2) uses, whatever
    # fresh_seed is
    rng = np.random.default_rng([fresh_seed, 3, count])
    counts, ids, per_class = _write_split(year_root, name, count, rng,
                                          image_size, pools, _class_probs())
    _write_image_sets(osp.join(year_root, 'ImageSets', 'Main'), name, ids,
                      per_class)
    counts['digit_images'] = [len(pools[k]) for k in range(len(DIGIT_CLASSES))]
    return counts
