"""Painting on a float RGB canvas: the digit scenes' shared drawing steps.

A canvas is an (H, W, 3) float array of grey levels 0..255 (clipped by the
caller); DigitsVOC and :class:`~.digit_scene.RandomDigitScene` share it.
"""
import numpy as np

__all__ = ['resize_patch', 'textured_background', 'blend_mask']


def resize_patch(patch: np.ndarray, width: int, height: int) -> np.ndarray:
    """Bicubic resize of a float image in [0, 1] to (height, width)."""
    from PIL import Image
    img = Image.fromarray(np.uint8(np.clip(patch, 0, 1) * 255))
    out = img.resize((width, height), Image.BICUBIC)
    return np.asarray(out, dtype=np.float64) / 255.0


def textured_background(rng: np.random.Generator, size: int) -> np.ndarray:
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
        [resize_patch((coarse[..., c] + 3) / 6, size, size) * 6 - 3
         for c in range(3)], -1)
    img += noise * rng.uniform(5, 25)
    return img + rng.normal(0, 6, size=img.shape)


def blend_mask(img: np.ndarray, mask: np.ndarray, x0: int, y0: int,
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
