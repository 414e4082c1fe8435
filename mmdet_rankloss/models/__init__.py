"""Retrieval models (plain and FastAP's large-batch wrapper) and the
rank-loss heads, registered in ``mmdet.registry.MODELS``, the
``'Orthogonal'`` weight initialiser (MMEngine's ``WEIGHT_INITIALIZERS``), and
the check that a ``loss_cls`` fits its head (``head_fit_faults``; at build
time with the patch ``head_fit_check`` of :mod:`mmdet_rankloss.patches`)."""
from .dense_heads import RaMBOATSSHead, RaMBORetinaHead, RankLossDenseHeadMixin
from .dino_heads import (ALRPDINOHead, RaMBODINOHead, RankLossDINOHead,
                         RankSortDINOHead)
from .fcos_heads import RaMBOFCOSHead, RankSortFCOSHead
from .head_checks import HeadFitError, head_fit_faults
from .large_batch import LargeBatchRetrievalModel, chunked_embedding_backward
from .match_costs import HighOrderMatchCost
from .rank_sort_heads import (ALRPATSSHead, ALRPRetinaHead,
                              ErrorDrivenDenseHeadMixin, RankSortATSSHead,
                              RankSortBBoxHead, RankSortRetinaHead)
from .rank_sort_mask_heads import RankSortMaskHead, RankSortRoIHead
from .rank_sort_paa import RankSortPAAHead
from .retrieval import RetrievalModel
from .weight_init import OrthogonalInit, orthogonal_init

__all__ = [
    'RetrievalModel', 'OrthogonalInit', 'orthogonal_init',
    'RankLossDenseHeadMixin', 'RaMBORetinaHead', 'RaMBOATSSHead',
    'LargeBatchRetrievalModel', 'chunked_embedding_backward', 'HeadFitError',
    'head_fit_faults', 'ErrorDrivenDenseHeadMixin', 'RankSortRetinaHead',
    'RankSortATSSHead', 'ALRPRetinaHead', 'ALRPATSSHead', 'RankSortBBoxHead',
    'RankSortMaskHead', 'RankSortRoIHead', 'RaMBOFCOSHead', 'RankSortFCOSHead',
    'RankLossDINOHead', 'RankSortDINOHead', 'RaMBODINOHead', 'ALRPDINOHead',
    'HighOrderMatchCost', 'RankSortPAAHead'
]
