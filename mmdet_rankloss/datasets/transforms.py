"""Packing an image and its class label for a retrieval model."""
from typing import Sequence

import numpy as np
import torch
from mmcv.transforms import BaseTransform
from mmengine.structures import BaseDataElement

from mmdet.registry import TRANSFORMS

__all__ = ['PackRetrievalInputs']


@TRANSFORMS.register_module()
class PackRetrievalInputs(BaseTransform):
    """Pack ``img`` and ``gt_label`` into ``inputs`` and ``data_samples``.

    The retrieval counterpart of mmdet's ``PackDetInputs``: the image
    becomes a (C, H, W) tensor of its own dtype (a 2-D grayscale image gets
    C = 1), and the data sample is a
    :class:`~mmengine.structures.BaseDataElement` with the class label as a
    0-d int64 tensor ``gt_label`` and the present ``meta_keys`` as
    metainfo (``sample_idx`` orders the evaluation, ``is_query`` separates
    In-Shop's query and gallery sets).

    Args:
        meta_keys (Sequence[str]): Keys copied into the metainfo when
            present. Defaults to ``('img_path', 'ori_shape', 'img_shape',
            'sample_idx', 'super_label', 'is_query', 'flip')``.
    """

    def __init__(self,
                 meta_keys: Sequence[str] = ('img_path', 'ori_shape',
                                             'img_shape', 'sample_idx',
                                             'super_label', 'is_query',
                                             'flip')) -> None:
        self.meta_keys = tuple(meta_keys)

    def transform(self, results: dict) -> dict:
        """Pack the image and label.

        Args:
            results (dict): Needs ``img`` (H, W) or (H, W, C) and
                ``gt_label``.

        Returns:
            dict: ``inputs`` (C, H, W) tensor and ``data_samples``.
        """
        if 'img' not in results or 'gt_label' not in results:
            raise ValueError('PackRetrievalInputs needs "img" and "gt_label" '
                             f'in the results, got keys {sorted(results)}')
        img = np.asarray(results['img'])
        if img.ndim == 2:
            img = img[..., None]
        if img.ndim != 3:
            raise ValueError(
                f'img must be (H, W) or (H, W, C), got shape {img.shape}')
        inputs = torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0,
                                                                     1)))
        sample = BaseDataElement(metainfo={
            key: results[key]
            for key in self.meta_keys if key in results
        })
        sample.gt_label = torch.as_tensor(
            int(results['gt_label']), dtype=torch.int64)
        return dict(inputs=inputs, data_samples=sample)

    def __repr__(self) -> str:
        return f'{type(self).__name__}(meta_keys={self.meta_keys})'
