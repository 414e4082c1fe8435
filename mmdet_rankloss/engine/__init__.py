"""Training procedures: FastAP's large-batch heuristic (section 4.1)."""
from .large_batch import LargeBatchRetrievalModel, chunked_embedding_backward

__all__ = ['LargeBatchRetrievalModel', 'chunked_embedding_backward']
