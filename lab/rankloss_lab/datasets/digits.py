"""A retrieval dataset that needs no download: scikit-learn's digits.

The 1,797 8x8 handwritten digits of ``sklearn.datasets.load_digits`` ship
with scikit-learn, so the retrieval quickstart and tests run offline.
"""
from typing import List, Sequence

import numpy as np

from mmdet.registry import DATASETS
from mmdet_rankloss.datasets.retrieval import RetrievalDataset

__all__ = ['DigitInstancesDataset']


@DATASETS.register_module()
class DigitInstancesDataset(RetrievalDataset):
    """Each of scikit-learn's 1,797 digit images is a class of its own (the
    Stanford Online Products protocol on digits), seen in several views
    (what the pipeline makes of its 8x8 image). A sample has ``img`` (8x8
    ``uint8``), ``gt_label`` (its index in ``load_digits()``), ``digit`` and
    ``view``; each instance is listed ``views`` (>= 2) times. ``split``:
    ``'train'``, ``'val'`` or ``'test'``, of ``split_sizes`` instances (at
    most 1,797 together) drawn by a permutation of seed ``split_seed``;
    ``**kwargs``: :class:`~mmdet_rankloss.datasets.RetrievalDataset`'s.
    """
    SPLITS = ('train', 'val', 'test')
    NUM_IMAGES = 1797

    def __init__(self, split: str = 'train', views: int = 4,
                 split_sizes: Sequence[int] = (997, 300, 500),
                 split_seed: int = 0, **kwargs) -> None:
        name = type(self).__name__
        if isinstance(views, bool) or not isinstance(views, int) or \
                views < 2:
            raise ValueError(f'{name}: views must be an int >= 2 (a query '
                             f'needs another view of its instance), got '
                             f'{views!r}')
        sizes = tuple(split_sizes) if isinstance(split_sizes,
                                                 (tuple, list)) else ()
        if len(sizes) != 3 or any(
                isinstance(s, bool) or not isinstance(s, int) or s < 1
                for s in sizes) or sum(sizes) > self.NUM_IMAGES:
            raise ValueError(
                f'{name}: split_sizes must be three ints >= 1 (train, val, '
                f'test) summing to at most {self.NUM_IMAGES}, got '
                f'{split_sizes!r}')
        if isinstance(split_seed, bool) or not isinstance(
                split_seed, int) or split_seed < 0:
            raise ValueError(
                f'{name}: split_seed must be an int >= 0, got {split_seed!r}')
        self.views, self.split_sizes, self.split_seed = (views, sizes,
                                                         split_seed)
        super().__init__(split=split, **kwargs)

    def instances(self) -> np.ndarray:
        """The ``load_digits()`` indices of this split's instances, sorted."""
        order = np.random.default_rng(self.split_seed).permutation(
            self.NUM_IMAGES)
        start = sum(self.split_sizes[:self.SPLITS.index(self.split)])
        size = self.split_sizes[self.SPLITS.index(self.split)]
        return np.sort(order[start:start + size])

    def load_data_list(self) -> List[dict]:
        """Every instance of the split, ``views`` times."""
        from sklearn.datasets import load_digits
        digits = load_digits()
        if len(digits.images) != self.NUM_IMAGES:
            raise RuntimeError(
                f'{type(self).__name__}: scikit-learn ships '
                f'{len(digits.images)} digits, expected {self.NUM_IMAGES}')
        images = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)
        return [dict(img=images[i], img_shape=images[i].shape,
                     ori_shape=images[i].shape, gt_label=int(i),
                     digit=int(digits.target[i]), view=view)
                for i in self.instances() for view in range(self.views)]
