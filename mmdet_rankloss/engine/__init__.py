"""Training procedures: the hooks that make a resume exact, and fp32 logits
for RaMBO under mixed precision.

``LargeBatchRetrievalModel`` (FastAP's large-batch heuristic, section 4.1)
is a model and lives in :mod:`mmdet_rankloss.models.large_batch`; it is
re-exported here for old imports.
"""
from ..models.large_batch import (LargeBatchRetrievalModel,
                                  chunked_embedding_backward)
from .hooks import RandomStateHook, RankLossMemoryHook
from .precision import RankLogitsFp32Hook, run_in_weight_dtype

__all__ = [
    'LargeBatchRetrievalModel', 'chunked_embedding_backward',
    'RandomStateHook', 'RankLossMemoryHook', 'RankLogitsFp32Hook',
    'run_in_weight_dtype'
]
