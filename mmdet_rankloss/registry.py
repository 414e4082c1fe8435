"""Registry scope ``mmdet_rankloss``: children of MMDetection's registries.

The package registers its modules in MMDetection's own registries, so the
usual ``default_scope = 'mmdet'`` finds them. This module exists for configs
that inherit ours through ``_base_ = 'mmdet_rankloss::rambo/...'``: MMEngine
then tags every inherited dict with ``_scope_='mmdet_rankloss'``, imports
``mmdet_rankloss.registry`` and looks the scope up in the registry tree. Each
registry below is a child of the MMDetection registry of the same name, so a
lookup in the ``mmdet_rankloss`` scope falls back to MMDetection's modules
(and to ours registered there). The children lazily import MMDetection's
module locations too, because a child lookup does not trigger its parent's
lazy imports.
"""
from mmengine.registry import Registry

from mmdet import registry as _mmdet_registry

SCOPE = 'mmdet_rankloss'

_NAMES = ('RUNNERS', 'RUNNER_CONSTRUCTORS', 'LOOPS', 'HOOKS', 'DATASETS',
          'DATA_SAMPLERS', 'TRANSFORMS', 'MODELS', 'MODEL_WRAPPERS',
          'WEIGHT_INITIALIZERS', 'OPTIMIZERS', 'OPTIM_WRAPPERS',
          'OPTIM_WRAPPER_CONSTRUCTORS', 'PARAM_SCHEDULERS', 'METRICS',
          'EVALUATOR', 'TASK_UTILS', 'VISUALIZERS', 'VISBACKENDS',
          'LOG_PROCESSORS')


def _child(parent: Registry) -> Registry:
    """Returns the ``mmdet_rankloss``-scoped child of a registry of mmdet."""
    return Registry(
        parent.name,
        parent=parent,
        scope=SCOPE,
        locations=list(parent._locations) + [SCOPE])


RUNNERS = _child(_mmdet_registry.RUNNERS)
RUNNER_CONSTRUCTORS = _child(_mmdet_registry.RUNNER_CONSTRUCTORS)
LOOPS = _child(_mmdet_registry.LOOPS)
HOOKS = _child(_mmdet_registry.HOOKS)
DATASETS = _child(_mmdet_registry.DATASETS)
DATA_SAMPLERS = _child(_mmdet_registry.DATA_SAMPLERS)
TRANSFORMS = _child(_mmdet_registry.TRANSFORMS)
MODELS = _child(_mmdet_registry.MODELS)
MODEL_WRAPPERS = _child(_mmdet_registry.MODEL_WRAPPERS)
WEIGHT_INITIALIZERS = _child(_mmdet_registry.WEIGHT_INITIALIZERS)
OPTIMIZERS = _child(_mmdet_registry.OPTIMIZERS)
OPTIM_WRAPPERS = _child(_mmdet_registry.OPTIM_WRAPPERS)
OPTIM_WRAPPER_CONSTRUCTORS = _child(
    _mmdet_registry.OPTIM_WRAPPER_CONSTRUCTORS)
PARAM_SCHEDULERS = _child(_mmdet_registry.PARAM_SCHEDULERS)
METRICS = _child(_mmdet_registry.METRICS)
EVALUATOR = _child(_mmdet_registry.EVALUATOR)
TASK_UTILS = _child(_mmdet_registry.TASK_UTILS)
VISUALIZERS = _child(_mmdet_registry.VISUALIZERS)
VISBACKENDS = _child(_mmdet_registry.VISBACKENDS)
LOG_PROCESSORS = _child(_mmdet_registry.LOG_PROCESSORS)

__all__ = ['SCOPE'] + list(_NAMES)
