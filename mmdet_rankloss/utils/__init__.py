"""MMEngine / MMDetection integration helpers.

Nothing here changes MMEngine: every patch of MMEngine's behaviour is in
:mod:`mmdet_rankloss.patches`. ``allow_mmengine_checkpoint_globals``,
``register_config_package`` and ``atomic_local_writes`` are kept as the
names of its ``apply_checkpoint_loader``, ``apply_config_scope`` and
``apply_atomic_checkpoints`` (which makes checkpoint writes atomic).
"""
from ..patches import apply_atomic_checkpoints as atomic_local_writes
from ..patches import \
    apply_checkpoint_loader as allow_mmengine_checkpoint_globals
from ..patches import apply_config_scope as register_config_package
from .checkpoint import (CorruptCheckpointError, UnsafeCheckpointError,
                         checkpoint_globals)
from .config import config_root, package_root
from .mmdet_tools import mmdet_tool_path, run_mmdet_tool

__all__ = [
    'allow_mmengine_checkpoint_globals', 'atomic_local_writes',
    'checkpoint_globals', 'CorruptCheckpointError', 'UnsafeCheckpointError',
    'config_root',
    'package_root', 'register_config_package', 'mmdet_tool_path',
    'run_mmdet_tool'
]
