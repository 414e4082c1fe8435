"""Training procedures: FastAP's large-batch heuristic (section 4.1), and
the hooks that make a resume exact."""
from .hooks import RandomStateHook, RankLossMemoryHook
from .large_batch import LargeBatchRetrievalModel, chunked_embedding_backward

__all__ = [
    'LargeBatchRetrievalModel', 'chunked_embedding_backward',
    'RandomStateHook', 'RankLossMemoryHook'
]
