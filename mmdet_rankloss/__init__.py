"""mmdet_rankloss: rank-based losses as MMDetection 3.x components.

The losses (:mod:`.losses`, with :mod:`.ops` and :mod:`.networks`) need
torch only: ``import mmdet_rankloss`` works without MMDetection, and the
losses are plain ``nn.Module`` classes and functions.

With MMDetection importable (:mod:`.optional_mmdet` decides), ``import
mmdet_rankloss`` (or ``custom_imports=dict(imports=['mmdet_rankloss'])``
in a config) also registers every loss, model, dataset, sampler, metric and
hook of the package in MMDetection's registries, and applies the patches of
:mod:`mmdet_rankloss.patches` named by the environment variable
``MMDET_RANKLOSS_PATCHES`` (default: ``config_scope``, ``checkpoint_loader``,
``head_fit_check``; ``none`` for none). ``tools/train.py`` and
``tools/test.py`` apply all of them (also ``atomic_checkpoints``). What each
changes and how to switch it: ``docs/architecture.md``, "Changes to MMEngine
(patches)".
"""
from .version import __version__
from . import ops  # noqa: F401
from . import networks  # noqa: F401  (SoDeep sorters)
from . import losses  # noqa: F401
from .optional_mmdet import HAS_MMDET

__all__ = ['__version__', 'HAS_MMDET', 'ops', 'networks', 'losses']

if HAS_MMDET:
    from . import datasets, evaluation, models, samplers  # noqa: F401
    from . import utils  # noqa: F401
    from . import engine  # noqa: F401  (FastAP large-batch training)
    from . import patches

    patches.apply_import_defaults()
    __all__ += ['datasets', 'evaluation', 'models', 'samplers', 'utils',
                'engine', 'patches']
