"""Retrieval models (plain and FastAP's large-batch wrapper) and the
rank-loss dense heads, registered in ``mmdet.registry.MODELS``, the
``'Orthogonal'`` weight initialiser (MMEngine's ``WEIGHT_INITIALIZERS``), and
the build-time check that a ``loss_cls`` fits its head: with the patch
``head_fit_check`` of :mod:`mmdet_rankloss.patches` (applied by ``import
mmdet_rankloss``), ``MODELS.build`` refuses a head whose ``loss_cls`` (one of
ours) it cannot serve, naming the config field, its value and the fix."""
from .dense_heads import RaMBOATSSHead, RaMBORetinaHead, RankLossDenseHeadMixin
from .head_checks import HeadFitError, head_fit_faults
from .large_batch import LargeBatchRetrievalModel, chunked_embedding_backward
from .retrieval import RetrievalModel
from .weight_init import OrthogonalInit, orthogonal_init

__all__ = [
    'RetrievalModel', 'OrthogonalInit', 'orthogonal_init',
    'RankLossDenseHeadMixin', 'RaMBORetinaHead', 'RaMBOATSSHead',
    'LargeBatchRetrievalModel', 'chunked_embedding_backward',
    'HeadFitError', 'head_fit_faults'
]

from .rank_sort_heads import (  # noqa: E402
    ALRPATSSHead,
    ALRPRetinaHead,
    ErrorDrivenDenseHeadMixin,
    RankSortATSSHead,
    RankSortBBoxHead,
    RankSortRetinaHead,
)

__all__ += ['ErrorDrivenDenseHeadMixin', 'RankSortRetinaHead',
            'RankSortATSSHead', 'ALRPRetinaHead', 'ALRPATSSHead',
            'RankSortBBoxHead']

from .rank_sort_mask_heads import RankSortMaskHead, RankSortRoIHead  # noqa: E402

__all__ += ['RankSortMaskHead', 'RankSortRoIHead']

from .fcos_heads import RaMBOFCOSHead, RankSortFCOSHead  # noqa: E402

__all__ += ['RaMBOFCOSHead', 'RankSortFCOSHead']
