"""A retrieval dataset that needs no download: scikit-learn's digits.

The 1,797 8x8 grayscale handwritten digits of the UCI ML hand-written
digits test set ship inside the scikit-learn package
(``sklearn.datasets.load_digits``), so the retrieval quickstart and the
tests run offline. The split is zero-shot, as for CUB: train on some digit
classes, retrieve unseen ones.
"""
from typing import List, Sequence

import numpy as np

from mmdet.registry import DATASETS

from .retrieval import RetrievalDataset

__all__ = ['DigitsDataset']


@DATASETS.register_module()
class DigitsDataset(RetrievalDataset):
    """scikit-learn's 8x8 digits as an in-memory retrieval dataset.

    Each sample carries ``img``, an 8x8 ``uint8`` array (the 0-16 pixel
    values scaled to 0-255), so pipelines start with a resize (e.g. mmcv's
    ``Resize`` to 32x32) instead of ``LoadImageFromFile``, and
    ``gt_label``, the digit.

    Args:
        split (str): ``'train'``: the digits in ``train_classes`` (901
            images for 0-4); ``'test'``: the others (896 for 5-9); ``'all'``:
            all 1,797. Defaults to ``'train'``.
        train_classes (Sequence[int]): Digits of the training split.
            Defaults to (0, 1, 2, 3, 4).
        **kwargs: See :class:`~mmdet_rankloss.datasets.RetrievalDataset`
            (``pipeline``, ``indices``, ...; no files are read).
    """
    SPLITS = ('train', 'test', 'all')

    def __init__(self,
                 split: str = 'train',
                 train_classes: Sequence[int] = (0, 1, 2, 3, 4),
                 **kwargs) -> None:
        classes = set(int(c) for c in train_classes)
        if not classes or not classes <= set(range(10)):
            raise ValueError('train_classes must be a non-empty subset of '
                             f'0..9, got {train_classes!r}')
        self.train_classes = tuple(sorted(classes))
        super().__init__(split=split, **kwargs)

    def load_data_list(self) -> List[dict]:
        """Read the digits bundled with scikit-learn."""
        from sklearn.datasets import load_digits
        digits = load_digits()
        images = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)
        in_train = np.isin(digits.target, self.train_classes)
        if self.split == 'train':
            keep = in_train
        elif self.split == 'test':
            keep = ~in_train
        else:
            keep = np.ones_like(in_train)
        return [
            dict(
                img=images[i],
                img_shape=images[i].shape,
                ori_shape=images[i].shape,
                gt_label=int(digits.target[i])) for i in np.flatnonzero(keep)
        ]
