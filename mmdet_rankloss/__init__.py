"""mmdet_rankloss: rank-based losses as MMDetection 3.x components.

The losses (:mod:`.losses`, with :mod:`.ops` and :mod:`.networks`) and the
metric functions of :mod:`.evaluation` need torch and numpy only: ``import
mmdet_rankloss`` works without MMDetection.

With MMDetection importable (:mod:`.optional_mmdet` decides), the import
(or ``custom_imports=dict(imports=['mmdet_rankloss'])`` in a config) also
registers the package's losses, models, datasets, samplers, metrics and
hooks in MMDetection's registries, and its config scope, so that configs
may inherit ``_base_ = 'mmdet_rankloss::...'``. It changes nothing else in
MMEngine or MMDetection; the opt-in changes are in :mod:`.patches`.
"""
from . import evaluation, losses, networks, ops
from .optional_mmdet import HAS_MMDET
from .version import __version__

__all__ = [
    '__version__', 'HAS_MMDET', 'ops', 'networks', 'losses', 'evaluation'
]

if HAS_MMDET:
    from . import datasets, engine, models, samplers, utils
    from .patches import apply_config_scope

    apply_config_scope()
    __all__ += ['datasets', 'models', 'samplers', 'utils', 'engine']
