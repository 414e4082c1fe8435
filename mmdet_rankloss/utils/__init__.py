"""Checkpoint loading and config lookup for MMEngine.

Nothing here changes MMEngine: every patch of MMEngine's behaviour is in
:mod:`mmdet_rankloss.patches`.
"""
from .checkpoint import (CorruptCheckpointError, UnsafeCheckpointError,
                         checkpoint_globals)
from .config import config_root, package_root

__all__ = [
    'checkpoint_globals', 'CorruptCheckpointError', 'UnsafeCheckpointError',
    'config_root', 'package_root'
]
