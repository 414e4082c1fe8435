"""Retrieval model, registered in ``mmdet.registry.MODELS``."""
from .retrieval import RetrievalModel

__all__ = ['RetrievalModel']
