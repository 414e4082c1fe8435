"""MMEngine / MMDetection integration helpers and the VOC-layout writers.

Importing this package (``import mmdet_rankloss`` does) applies three small,
idempotent patches to MMEngine's environment:

* :func:`register_config_package`: configs may inherit
  ``_base_ = 'mmdet_rankloss::<subdir>/<file>.py'``;
* :func:`allow_mmengine_checkpoint_globals`: ``torch.load`` with torch >=
  2.6's ``weights_only=True`` default accepts the few non-tensor types that
  MMEngine stores in its own checkpoints, so ``--resume`` works; a
  checkpoint that is truncated or holds other pickled objects gets an
  error naming the file;
* :func:`atomic_local_writes`: checkpoints are written to a temporary file
  and renamed into place, so a killed job leaves no truncated checkpoint.
"""
from .checkpoint import (CorruptCheckpointError, UnsafeCheckpointError,
                         allow_mmengine_checkpoint_globals,
                         atomic_local_writes, checkpoint_globals)
from .config import config_root, package_root, register_config_package
from .mmdet_tools import mmdet_tool_path, run_mmdet_tool
from .digits_voc import DIGIT_CLASSES, make_digits_voc
from .toy_voc import TOY_CLASSES, make_toy_voc

register_config_package()
allow_mmengine_checkpoint_globals()
atomic_local_writes()

__all__ = [
    'allow_mmengine_checkpoint_globals', 'atomic_local_writes',
    'checkpoint_globals', 'CorruptCheckpointError', 'UnsafeCheckpointError',
    'config_root',
    'package_root', 'register_config_package', 'mmdet_tool_path',
    'run_mmdet_tool', 'TOY_CLASSES', 'make_toy_voc', 'DIGIT_CLASSES',
    'make_digits_voc'
]
