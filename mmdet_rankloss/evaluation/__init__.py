"""Retrieval metrics: an exact, chunked functional core and a registered
MMEngine metric."""
from .functional import map_at_r, recall_at_k, retrieval_metrics
from .retrieval_metric import RetrievalMetric

__all__ = ['recall_at_k', 'map_at_r', 'retrieval_metrics', 'RetrievalMetric']
