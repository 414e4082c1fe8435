"""Batch samplers for metric learning, registered in ``DATA_SAMPLERS``."""
from .retrieval import PKSampler, SuperClassPairSampler

__all__ = ['PKSampler', 'SuperClassPairSampler']
