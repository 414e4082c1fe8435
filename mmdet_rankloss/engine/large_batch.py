"""Deprecated location of the large-batch model wrapper.

``LargeBatchRetrievalModel`` is a model (a ``RetrievalModel`` with its own
``train_step``), so it lives in :mod:`mmdet_rankloss.models.large_batch`.
This module re-exports it for old imports; configs name it by its
registered type, ``'LargeBatchRetrievalModel'``, which has not changed.
"""
import warnings

from ..models.large_batch import (LargeBatchRetrievalModel,
                                  chunked_embedding_backward)

__all__ = ['LargeBatchRetrievalModel', 'chunked_embedding_backward']

warnings.warn(
    'mmdet_rankloss.engine.large_batch is deprecated: import '
    'LargeBatchRetrievalModel and chunked_embedding_backward from '
    'mmdet_rankloss.models.large_batch', DeprecationWarning, stacklevel=2)
