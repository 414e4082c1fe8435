"""Retrieval model and the rank-loss dense heads, registered in
``mmdet.registry.MODELS``, and the ``'Orthogonal'`` weight initialiser
(MMEngine's ``WEIGHT_INITIALIZERS``)."""
from .dense_heads import (RankLossDenseHeadMixin, RaMBOATSSHead,
                          RaMBORetinaHead)
from .retrieval import RetrievalModel
from .weight_init import OrthogonalInit, orthogonal_init

__all__ = [
    'RetrievalModel', 'OrthogonalInit', 'orthogonal_init',
    'RankLossDenseHeadMixin', 'RaMBORetinaHead', 'RaMBOATSSHead'
]
