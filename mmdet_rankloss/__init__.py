"""mmdet_rankloss: rank-based losses as MMDetection 3.x components.

``import mmdet_rankloss`` (or ``custom_imports=dict(imports=['mmdet_rankloss'])``
in a config) registers every loss, model, dataset, sampler, metric and hook of
the package in MMDetection's registries.
"""
from .version import __version__
from . import ops  # noqa: F401
from . import losses  # noqa: F401
from . import datasets, evaluation, models, samplers  # noqa: F401
from . import utils  # noqa: F401  (MMEngine config/checkpoint patches)
from . import engine  # noqa: F401  (FastAP large-batch training)

__all__ = ['__version__', 'ops', 'losses', 'datasets',
           'evaluation', 'models', 'samplers', 'utils', 'engine']
