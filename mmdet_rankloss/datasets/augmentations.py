"""Training augmentations of the AUC loss recipe that mmcv/mmdet lack.

The AUC loss paper (Gajic et al., section 4.2) augments one image per class
with flipping, cutout, zoom, colour shift and motion blur; mmcv/mmdet have
``RandomFlip``, ``CutOut`` and ``YOLOXHSVRandomAug``, this module
:class:`RandomZoom`, :class:`RandomMotionBlur` and :class:`AugmentLaterViews`.
Randomness is NumPy's global generator in ``@cache_randomness`` methods, as in
mmcv."""
import math
from numbers import Number
from typing import Callable, List, Sequence, Tuple, Union

import cv2
import mmcv
import numpy as np
from mmcv.transforms import BaseTransform, Compose
from mmcv.transforms.utils import cache_randomness

from mmdet.registry import TRANSFORMS

__all__ = ['RandomZoom', 'RandomMotionBlur', 'AugmentLaterViews']


def _check_prob(prob) -> float:
    if isinstance(prob, bool) or not isinstance(prob, Number) or \
            not 0 <= prob <= 1:
        raise ValueError(f'prob must be a number in [0, 1], got {prob!r}')
    return float(prob)


def _image(results: dict, name: str) -> np.ndarray:
    img = results.get('img')
    if not isinstance(img, np.ndarray) or img.ndim not in (2, 3) or \
            0 in img.shape[:2]:
        raise ValueError(
            f'{name} needs results["img"], a non-empty (H, W) or (H, W, C) '
            f'array, got '
            f'{getattr(img, "shape", type(img).__name__)}')
    return np.ascontiguousarray(img)


class _RandomImageTransform(BaseTransform):
    """An image-only transform applied with probability ``prob``.

    Subclasses draw their parameters in a ``@cache_randomness``
    ``_random_params`` (first item: whether to apply) and change the image
    in ``_apply``; the image keeps its shape and dtype, so the rest of the
    pipeline (and the batch) is unaffected.
    """

    def transform(self, results: dict) -> dict:
        """Transform ``results['img']``.

        Args:
            results (dict): With ``img`` (H, W) or (H, W, C).

        Returns:
            dict: ``img`` transformed (or untouched if not drawn), same shape
            and dtype.
        """
        img = _image(results, type(self).__name__)
        apply, *params = self._random_params()
        if apply:
            results['img'] = self._apply(img, *params)
        return results

    def _random_params(self) -> tuple:
        raise NotImplementedError(
            f'{type(self).__name__} must implement _random_params(), '
            'returning (apply, *parameters of _apply)')

    def _apply(self, img: np.ndarray, *params) -> np.ndarray:
        raise NotImplementedError(
            f'{type(self).__name__} must implement _apply(img, *params)')


@TRANSFORMS.register_module()
class RandomZoom(_RandomImageTransform):
    """Zoom in or out about a random point, keeping the image size.

    With probability ``prob`` the image (H, W) is resized (bilinear) by a scale
    ``s`` drawn log-uniformly from ``scale_range``; zooming in, a window of the
    original size at a random position is cut out; zooming out, the image is
    placed at a random position on a canvas of ``pad_val``. Shape and dtype are
    kept.

    Required Keys: ``img``. Modified Keys: ``img``.

    Args:
        scale_range (tuple[float, float]): Smallest and largest scale, > 0.
            Defaults to (0.8, 1.25).
        prob (float): Probability of zooming. Defaults to 0.5.
        pad_val (float | Sequence[float]): Canvas value of a zoom out, one
            number or one per channel. Defaults to 0.
    """

    def __init__(self,
                 scale_range: Tuple[float, float] = (0.8, 1.25),
                 prob: float = 0.5,
                 pad_val: Union[float, Sequence[float]] = 0) -> None:
        if not isinstance(scale_range, (tuple, list)) or \
                len(scale_range) != 2 or not all(
                    isinstance(v, Number) and not isinstance(v, bool)
                    and math.isfinite(v) and v > 0 for v in scale_range) or \
                scale_range[0] > scale_range[1]:
            raise ValueError('scale_range must be (low, high) with '
                             f'0 < low <= high, got {scale_range!r}')
        values = pad_val if isinstance(pad_val, (tuple, list)) else [pad_val]
        if not values or not all(
                isinstance(v, Number) and not isinstance(v, bool)
                for v in values):
            raise ValueError('pad_val must be a number or a sequence of '
                             f'numbers, got {pad_val!r}')
        self.scale_range = (float(scale_range[0]), float(scale_range[1]))
        self.prob = _check_prob(prob)
        self.pad_val = pad_val

    @cache_randomness
    def _random_params(self) -> Tuple[bool, float, float, float]:
        apply = np.random.rand() < self.prob
        low, high = np.log(self.scale_range)
        scale = float(np.exp(np.random.uniform(low, high)))
        return apply, scale, np.random.rand(), np.random.rand()

    def _apply(self, img: np.ndarray, scale: float, fy: float,
               fx: float) -> np.ndarray:
        h, w = img.shape[:2]
        nh, nw = max(1, round(h * scale)), max(1, round(w * scale))
        resized = mmcv.imresize(img, (nw, nh), interpolation='bilinear')
        if resized.ndim < img.ndim:  # cv2 drops a single channel
            resized = resized[..., None]
        if nh >= h and nw >= w:  # zoom in: crop
            y, x = int(fy * (nh - h + 1)), int(fx * (nw - w + 1))
            out = resized[y:y + h, x:x + w]
        else:  # zoom out: paste on a canvas
            channels = img.shape[2] if img.ndim == 3 else 1
            pad_val = np.asarray(self.pad_val).reshape(-1)
            if len(pad_val) not in (1, channels):
                raise ValueError(
                    f'pad_val has {len(pad_val)} values, the image '
                    f'{channels} channels')
            out = np.empty_like(img)
            out[...] = pad_val if len(pad_val) > 1 else pad_val[0]
            y, x = int(fy * (h - nh + 1)), int(fx * (w - nw + 1))
            out[y:y + nh, x:x + nw] = resized
        return np.ascontiguousarray(out)

    def __repr__(self) -> str:
        return (f'{type(self).__name__}(scale_range={self.scale_range}, '
                f'prob={self.prob}, pad_val={self.pad_val})')


def motion_blur_kernel(size: int, angle: float) -> np.ndarray:
    """A normalised ``size x size`` kernel of a line through its centre.

    Points along the segment of length ``size`` centred in the kernel, at
    ``angle`` degrees from the horizontal (counter-clockwise), are rounded
    to pixels, which are set to 1; the kernel is divided by its sum, so a
    constant image stays constant.

    Args:
        size (int): Odd kernel side, >= 3.
        angle (float): Direction of the motion in degrees.

    Returns:
        np.ndarray: float32 (size, size), sums to 1.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 3 or \
            size % 2 == 0:
        raise ValueError(f'size must be an odd int >= 3, got {size!r}')
    c = (size - 1) / 2
    t = np.linspace(-c, c, 4 * size)
    rad = math.radians(angle)
    xs = np.clip(np.rint(c + t * math.cos(rad)), 0, size - 1).astype(int)
    ys = np.clip(np.rint(c - t * math.sin(rad)), 0, size - 1).astype(int)
    kernel = np.zeros((size, size), np.float32)
    kernel[ys, xs] = 1
    return kernel / kernel.sum()


@TRANSFORMS.register_module()
class RandomMotionBlur(_RandomImageTransform):
    """Blur along a random straight line, as a moving camera does.

    With probability ``prob``, an odd kernel size ``k`` is drawn uniformly
    from ``kernel_size`` (inclusive) and a direction uniformly from [0, 180)
    degrees; the image is convolved (``cv2.filter2D``, borders reflected)
    with :func:`motion_blur_kernel` ``(k, angle)``, a normalised line of
    ``k`` pixels through the kernel's centre. Shape and dtype are kept
    (uint8 values are rounded and saturated by OpenCV).

    Required Keys: ``img``. Modified Keys: ``img``.

    Args:
        kernel_size (int | tuple[int, int]): Odd kernel size >= 3, or the
            smallest and largest one. Defaults to (3, 9).
        prob (float): Probability of blurring. Defaults to 0.5.
    """

    def __init__(self,
                 kernel_size: Union[int, Tuple[int, int]] = (3, 9),
                 prob: float = 0.5) -> None:
        sizes = kernel_size if isinstance(kernel_size,
                                          (tuple, list)) else (kernel_size,
                                                               kernel_size)
        if len(sizes) != 2 or not all(
                isinstance(k, int) and not isinstance(k, bool) and k >= 3
                and k % 2 == 1 for k in sizes) or sizes[0] > sizes[1]:
            raise ValueError('kernel_size must be an odd int >= 3 or '
                             f'(low, high) of them, got {kernel_size!r}')
        self.kernel_size = (int(sizes[0]), int(sizes[1]))
        self.prob = _check_prob(prob)

    @cache_randomness
    def _random_params(self) -> Tuple[bool, int, float]:
        apply = np.random.rand() < self.prob
        low, high = self.kernel_size
        size = low + 2 * np.random.randint(0, (high - low) // 2 + 1)
        return apply, int(size), float(np.random.uniform(0, 180))

    def _apply(self, img: np.ndarray, size: int,
               angle: float) -> np.ndarray:
        out = cv2.filter2D(
            img, -1, motion_blur_kernel(size, angle),
            borderType=cv2.BORDER_REFLECT_101)
        return out.reshape(img.shape)

    def __repr__(self) -> str:
        return (f'{type(self).__name__}(kernel_size={self.kernel_size}, '
                f'prob={self.prob})')


@TRANSFORMS.register_module()
class AugmentLaterViews(BaseTransform):
    """Augment every image but the first of its class in the batch.

    The AUC loss recipe (Gajic et al., section 4.2: "we augment one of the two
    images per class in a mini-batch"), with ``PKSampler`` batches. The
    dataset's ``__getitems__`` (the ``DataLoader`` passes a whole batch's
    indices) sets ``results['class_view']`` to the number of images of the same
    class before this one; ``transforms`` run when it is >= 1.

    Required Keys: ``class_view``, and those of ``transforms``.

    Args:
        transforms (list[dict | callable]): The augmentations (configs of
            registered transforms, or callables), applied in order.

    Raises:
        ValueError: ``class_view`` is missing (a sample fetched alone, e.g.
            ``dataset[i]``, or by a dataset that does not mark batches).
    """

    def __init__(self, transforms: List[Union[dict, Callable]]) -> None:
        if not isinstance(transforms, (list, tuple)) or not transforms:
            raise ValueError('transforms must be a non-empty list of '
                             f'transform configs, got {transforms!r}')
        self.transforms = Compose(transforms)

    def transform(self, results: dict) -> Union[dict, None]:
        """Augment the image unless it is the first of its class.

        Args:
            results (dict): With ``class_view`` (int >= 0).

        Returns:
            dict | None: The (augmented) results; None if a transform
            dropped the sample.
        """
        view = results.get('class_view')
        if view is None:
            raise ValueError(
                'AugmentLaterViews needs results["class_view"] (the number of '
                'images of the same class before this one in the batch), '
                'which RetrievalDataset sets when the DataLoader fetches a '
                'whole batch; this sample was fetched alone (dataset[i]) or '
                'by a dataset that does not mark batches. Keys: '
                f'{sorted(results)}')
        is_int = isinstance(view, (int, np.integer)) and \
            not isinstance(view, bool)
        if not is_int or view < 0:
            raise ValueError(f'class_view must be an int >= 0, got {view!r}')
        return self.transforms(results) if view >= 1 else results

    def __repr__(self) -> str:
        return f'{type(self).__name__}(transforms={self.transforms})'
