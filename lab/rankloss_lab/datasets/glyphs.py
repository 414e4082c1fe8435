"""Printed glyphs: a classification set that plays ImageNet's part for
DigitsVOC (docs/evidence.md#digitsvoc): 62 classes in matplotlib's 21 text
faces on DigitsVOC's background; no image of any data set.
"""
import os.path as osp
import string
from functools import lru_cache
from typing import List, Tuple

import numpy as np

from .canvas import resize_patch, textured_background

__all__ = ['GLYPH_CLASSES', 'glyph_fonts', 'render_glyph', 'make_glyph_set']

#: The 62 classes in label order: digits (label k is digit k), then letters.
GLYPH_CLASSES = string.digits + string.ascii_uppercase + string.ascii_lowercase

# matplotlib's text faces (its symbol and size-variant fonts hold no letters)
_TEXT_FONTS = (
    'DejaVuSans.ttf', 'DejaVuSans-Bold.ttf', 'DejaVuSans-Oblique.ttf',
    'DejaVuSans-BoldOblique.ttf', 'DejaVuSansMono.ttf',
    'DejaVuSansMono-Bold.ttf', 'DejaVuSansMono-Oblique.ttf',
    'DejaVuSansMono-BoldOblique.ttf', 'DejaVuSerif.ttf',
    'DejaVuSerif-Bold.ttf', 'DejaVuSerif-Italic.ttf',
    'DejaVuSerif-BoldItalic.ttf', 'STIXGeneral.ttf', 'STIXGeneralBol.ttf',
    'STIXGeneralItalic.ttf', 'STIXGeneralBolIta.ttf', 'cmr10.ttf',
    'cmb10.ttf', 'cmss10.ttf', 'cmti10.ttf', 'cmtt10.ttf')


def glyph_fonts() -> List[str]:
    """Paths of the 21 text faces in matplotlib's data directory."""
    import matplotlib
    root = osp.join(matplotlib.get_data_path(), 'fonts', 'ttf')
    paths = [osp.join(root, name) for name in _TEXT_FONTS]
    missing = [p for p in paths if not osp.isfile(p)]
    if missing:
        raise FileNotFoundError(
            f'glyph fonts: matplotlib {matplotlib.__version__} lacks '
            f'{len(missing)} of its text faces, e.g. {missing[0]}')
    return paths


@lru_cache(maxsize=None)
def _font(path: str, points: int):
    from PIL import ImageFont
    return ImageFont.truetype(path, points)


def _glyph_mask(font_path: str, char: str, points: int,
                angle: float) -> np.ndarray:
    """The glyph's ink, rotated and cropped to its box, floats in [0, 1]."""
    from PIL import Image, ImageDraw
    font = _font(font_path, points)
    left, top, right, bottom = font.getbbox(char)
    canvas = Image.new('L', (right - left + 4, bottom - top + 4), 0)
    ImageDraw.Draw(canvas).text((2 - left, 2 - top), char, fill=255,
                                font=font)
    canvas = canvas.rotate(angle, resample=Image.BICUBIC, expand=True)
    box = canvas.getbbox()
    if box is None:
        raise ValueError(f'glyph fonts: {osp.basename(font_path)} draws no '
                         f'ink for {char!r}')
    return np.asarray(canvas.crop(box), dtype=np.float64) / 255.0


def _strokes(rng: np.random.Generator, img: np.ndarray) -> None:
    """Unlabelled clutter: a few straight strokes of random colour."""
    from PIL import Image, ImageDraw
    size = img.shape[0]
    layer = Image.new('L', (size, size), 0)
    draw = ImageDraw.Draw(layer)
    for _ in range(int(rng.integers(0, 4))):
        x0, y0, x1, y1 = rng.uniform(0, size, 4)
        draw.line((x0, y0, x1, y1), fill=255, width=int(rng.integers(1, 3)))
    mask = np.asarray(layer, dtype=np.float64)[..., None] / 255.0
    img[:] = img * (1 - mask) + mask * rng.uniform(0, 255, 3)


def render_glyph(rng: np.random.Generator, font_path: str, char: str,
                 size: int = 64) -> np.ndarray:
    """One ``char`` in the face ``font_path`` on a textured background:
    (size, size, 3) uint8 RGB, the glyph's long side 30 to 85 % of
    ``size``, rotated up to ±20 degrees, wholly inside."""
    img = textured_background(rng, size)
    _strokes(rng, img)
    long_side = min(rng.uniform(0.30, 0.85) * size, size - 2)
    # drawn large, then resized to the drawn long side
    ink = _glyph_mask(font_path, char, max(8, int(1.5 * long_side)),
                      rng.uniform(-20, 20))
    scale = long_side / max(ink.shape)
    ink = resize_patch(ink, max(1, round(ink.shape[1] * scale)),
                       max(1, round(ink.shape[0] * scale)))
    h, w = ink.shape
    y = int(rng.integers(0, size - h + 1))
    x = int(rng.integers(0, size - w + 1))
    region = img[y:y + h, x:x + w]
    colour = rng.uniform(0, 255, 3)
    behind = region.mean(axis=(0, 1))
    if np.abs(colour - behind).mean() < 80:  # too close: dark or light
        colour = (rng.uniform(0, 50, 3) if behind.mean() > 127 else
                  rng.uniform(205, 255, 3))
    mask = ink[..., None] * rng.uniform(0.75, 1.0)
    img[y:y + h, x:x + w] = region * (1 - mask) + mask * colour
    return np.uint8(np.clip(img + rng.normal(0, 4, img.shape), 0, 255))


def make_glyph_set(count: int, seed: int,
                   size: int = 64) -> Tuple[np.ndarray, np.ndarray]:
    """``count`` images (count, size, size, 3) uint8 RGB with balanced
    classes and faces, and their labels (count,) int64 into
    :data:`GLYPH_CLASSES`."""
    if int(count) != count or count < 1:
        raise ValueError(f'make_glyph_set: count must be a positive '
                         f'integer, got {count!r}')
    if int(size) != size or size < 16:
        raise ValueError(f'make_glyph_set: size must be an integer >= 16, '
                         f'got {size!r}')
    fonts = glyph_fonts()
    rng = np.random.default_rng([seed, 62, size])
    labels = np.arange(count) % len(GLYPH_CLASSES)
    faces = rng.permutation(np.arange(count) % len(fonts))
    rng.shuffle(labels)
    images = np.empty((count, size, size, 3), np.uint8)
    for i in range(count):
        images[i] = render_glyph(rng, fonts[faces[i]],
                                 GLYPH_CLASSES[labels[i]], size)
    return images, labels.astype(np.int64)
