"""Retrieval models (plain and FastAP's large-batch wrapper) and the
rank-loss dense heads, registered in ``mmdet.registry.MODELS``, and the
``'Orthogonal'`` weight initialiser (MMEngine's ``WEIGHT_INITIALIZERS``)."""
from .dense_heads import (RankLossDenseHeadMixin, RaMBOATSSHead,
                          RaMBORetinaHead)
from .large_batch import LargeBatchRetrievalModel, chunked_embedding_backward
from .retrieval import RetrievalModel
from .weight_init import OrthogonalInit, orthogonal_init

__all__ = [
    'RetrievalModel', 'OrthogonalInit', 'orthogonal_init',
    'RankLossDenseHeadMixin', 'RaMBORetinaHead', 'RaMBOATSSHead',
    'LargeBatchRetrievalModel', 'chunked_embedding_backward'
]
