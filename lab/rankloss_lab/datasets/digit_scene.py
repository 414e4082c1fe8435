"""Digits on random scenes: variation that raw pixels cannot see through.

:class:`RandomDigitScene` draws a digit at a random size, rotation and
position on DigitsVOC's textured background, in a stroke colour at least
``min_contrast`` grey levels from it; with ``seed`` one fixed scene per
``sample_idx`` (test), else a new one per call (training).
"""
from typing import Dict, Optional, Tuple

import cv2
import numpy as np
from mmcv.transforms import BaseTransform
from mmcv.transforms.utils import cache_randomness

from mmdet.registry import TRANSFORMS
from .canvas import blend_mask, textured_background

__all__ = ['RandomDigitScene', 'render_digit_scene']


def _stroke_colour(rng: np.random.Generator, local: np.ndarray,
                   min_contrast: float, light: bool) -> np.ndarray:
    """A random RGB colour whose grey level (channel mean) is at least
    ``min_contrast`` from ``local``'s, drawn on the allowed grey range."""
    if light:  # every channel lighter: no per-channel polarity flip
        return rng.uniform(np.minimum(local + min_contrast, 255.0), 255.0)
    grey = float(np.mean(local))
    below, above = grey - min_contrast, grey + min_contrast
    lengths = np.array([max(below, 0.0), max(255.0 - above, 0.0)])
    if lengths.sum() <= 0:  # cannot happen for min_contrast <= 127.5
        raise ValueError(f'min_contrast {min_contrast} leaves no colour '
                         f'for background grey {grey:.1f}')
    target = rng.uniform(0, lengths.sum())
    target = target if target < lengths[0] else above + target - lengths[0]
    # a random colour with that grey level: spread around it, then shifted
    spread = rng.uniform(-1, 1, size=3) * min(target, 255 - target, 60)
    colour = target + spread - spread.mean()
    return np.clip(colour, 0, 255)


def render_digit_scene(
        digit: np.ndarray, rng: np.random.Generator, canvas_size: int = 48,
        scale_range: Tuple[float, float] = (20.0, 40.0),
        max_rotation: float = 25.0, min_contrast: float = 80.0,
        texture: float = 1.0, polarity: str = 'random'
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Draws one digit on a random scene (:class:`RandomDigitScene`'s core).

    ``digit``: (h, w) grayscale, ink bright, any scale (divided by its
    maximum); ``scale_range``: the digit's long side in pixels, drawn
    log-uniformly; ``max_rotation``: degrees, uniform in ± it;
    ``min_contrast``: least grey-level gap (0-127.5) between the stroke and
    the mean background under the digit; ``texture``: background variation,
    0 (flat) to 1 (DigitsVOC's); ``polarity``: ``'random'`` (stroke darker
    or lighter) or ``'light'`` (always lighter; the background compressed to
    leave room). Returns ``img`` (S, S, 3) uint8 RGB (S: ``canvas_size``),
    ``mask`` (S, S) float ink in [0, 1], ``colour`` (3,) the stroke and
    ``local`` (3,) the mean background under the digit before drawing.
    """
    digit = np.asarray(digit, dtype=np.float64)
    if digit.ndim != 2 or digit.size == 0 or digit.max() <= 0:
        raise ValueError('render_digit_scene needs a non-empty 2-D digit '
                         f'with some ink, got shape {digit.shape}')
    digit = digit / digit.max()
    size = int(canvas_size)
    side = float(np.exp(rng.uniform(*np.log(scale_range))))
    angle = rng.uniform(-max_rotation, max_rotation)
    h, w = digit.shape
    scale = side / max(h, w)
    # the rotated digit's half extent, so that it stays on the canvas
    rad = np.deg2rad(angle)
    cos, sin = abs(np.cos(rad)), abs(np.sin(rad))
    half_w = 0.5 * scale * (w * cos + h * sin)
    half_h = 0.5 * scale * (w * sin + h * cos)
    cx = rng.uniform(half_w, max(size - half_w, half_w))
    cy = rng.uniform(half_h, max(size - half_h, half_h))
    # OpenCV puts pixel centres at integer coordinates: the digit's centre
    # ((w - 1) / 2, (h - 1) / 2) goes to the canvas point (cx, cy)
    centre = np.array([(w - 1) / 2, (h - 1) / 2])
    full = cv2.getRotationMatrix2D(tuple(centre), angle, scale)
    full[:, 2] += np.array([cx - 0.5, cy - 0.5]) - centre
    mask = cv2.warpAffine(
        digit, full, (size, size), flags=cv2.INTER_CUBIC,
        borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    mask = np.clip(mask, 0, 1)
    img = textured_background(rng, size)
    mean = img.reshape(-1, 3).mean(0)
    img = np.clip(mean + texture * (img - mean), 0, 255)
    if polarity == 'light':
        img *= (255.0 - min_contrast) / 255.0
    elif polarity != 'random':
        raise ValueError(
            f"polarity must be 'random' or 'light', got {polarity!r}")
    footprint = mask > 0.05
    local = img[footprint].mean(0) if footprint.any() else img.reshape(
        -1, 3).mean(0)
    colour = _stroke_colour(rng, local, min_contrast, polarity == 'light')
    blend_mask(img, mask, 0, 0, colour)
    return img.round().astype(np.uint8), mask, colour, local


@TRANSFORMS.register_module()
class RandomDigitScene(BaseTransform):
    """Draws a small grayscale digit on a random RGB scene.

    Required Keys: ``img`` (h, w) grayscale, ink bright; ``sample_idx`` with
    ``seed``. Modified Keys: ``img`` (S, S, 3) uint8 RGB, ``img_shape``.

    Args: as :func:`render_digit_scene` (``scale_range`` within
    (0, canvas_size], ``max_rotation`` in [0, 180]), and ``seed`` (int,
    optional): None (training), a new scene per call from NumPy's global
    generator (seeded per worker by MMEngine); an int (test), sample ``i``'s
    scene from ``np.random.default_rng((seed, i))``, the same in any order and
    kept (about 10 ms per render). Defaults to None.
    """

    def __init__(self, canvas_size: int = 48,
                 scale_range: Tuple[float, float] = (20.0, 40.0),
                 max_rotation: float = 25.0, min_contrast: float = 80.0,
                 seed: Optional[int] = None, texture: float = 1.0,
                 polarity: str = 'random') -> None:
        if isinstance(canvas_size, bool) or not isinstance(
                canvas_size, int) or canvas_size < 8:
            raise ValueError(
                f'canvas_size must be an int >= 8, got {canvas_size!r}')
        if not isinstance(scale_range, (tuple, list)) or len(
                scale_range) != 2 or not 0 < scale_range[0] <= scale_range[
                    1] <= canvas_size:
            raise ValueError('scale_range must be (low, high) with 0 < low '
                             f'<= high <= canvas_size ({canvas_size}), got '
                             f'{scale_range!r}')
        if not 0 <= max_rotation <= 180:
            raise ValueError(
                f'max_rotation must be in [0, 180], got {max_rotation!r}')
        if not 0 <= min_contrast <= 127.5:
            raise ValueError(
                f'min_contrast must be in [0, 127.5], got {min_contrast!r}')
        if isinstance(texture, bool) or not isinstance(
                texture, (int, float)) or not 0 <= texture <= 1:
            raise ValueError(
                f'texture must be a number in [0, 1], got {texture!r}')
        if polarity not in ('random', 'light'):
            raise ValueError(
                f"polarity must be 'random' or 'light', got {polarity!r}")
        if seed is not None and (isinstance(seed, bool)
                                 or not isinstance(seed, int) or seed < 0):
            raise ValueError(
                f'seed must be None or an int >= 0, got {seed!r}')
        self.canvas_size, self.polarity = canvas_size, polarity
        self.seed = seed
        self.scale_range = (float(scale_range[0]), float(scale_range[1]))
        self.max_rotation, self.min_contrast, self.texture = map(
            float, (max_rotation, min_contrast, texture))
        self._scenes: Dict[Tuple[int, bytes], np.ndarray] = {}

    @cache_randomness
    def _scene_seed(self) -> int:
        return int(np.random.randint(0, 2**31 - 1))

    def _render(self, img: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return render_digit_scene(img, rng, self.canvas_size,
                                  self.scale_range, self.max_rotation,
                                  self.min_contrast, self.texture,
                                  self.polarity)[0]

    def transform(self, results: dict) -> dict:
        """Replace ``results['img']`` with the digit on a scene."""
        img = results.get('img')
        if not isinstance(img, np.ndarray) or img.ndim != 2:
            raise ValueError(
                'RandomDigitScene needs results["img"], a 2-D grayscale '
                'digit, got '
                f'{getattr(img, "shape", type(img).__name__)}')
        if self.seed is None:
            scene = self._render(img,
                                 np.random.default_rng(self._scene_seed()))
        else:
            if 'sample_idx' not in results:
                raise ValueError(
                    'RandomDigitScene(seed=...) draws the scene of sample i '
                    'from (seed, i) and needs results["sample_idx"], got '
                    f'keys {sorted(results)}')
            # keyed by the digit too: another dataset's sample i differs
            key = (int(results['sample_idx']), img.tobytes())
            if key not in self._scenes:
                self._scenes[key] = self._render(
                    img, np.random.default_rng((self.seed, key[0])))
            scene = self._scenes[key].copy()
        results['img'] = scene
        results['img_shape'] = scene.shape[:2]
        return results

    def __repr__(self) -> str:
        return (f'{type(self).__name__}(canvas_size={self.canvas_size}, '
                f'scale_range={self.scale_range}, '
                f'max_rotation={self.max_rotation}, '
                f'min_contrast={self.min_contrast}, '
                f'texture={self.texture}, polarity={self.polarity!r}, '
                f'seed={self.seed})')
