"""Lets MMEngine 0.10.7 load its own checkpoints under torch >= 2.6.

torch 2.6 changed ``torch.load``'s default to ``weights_only=True``, which
unpickles only allow-listed types. MMEngine's checkpoints also hold the
runner's message hub (``HistoryBuffer`` objects with numpy arrays and numpy
scalars, and its statistics methods, pickled through ``getattr``), so
``Runner.resume`` and ``load_from`` stop with ``UnpicklingError``.

The fix keeps ``weights_only=True`` and only widens it where MMEngine loads
a checkpoint from a local path: :func:`allow_mmengine_checkpoint_globals`
replaces MMEngine's local loader with the same loader run inside
``torch.serialization.safe_globals(checkpoint_globals())``. Other
``torch.load`` calls in the process keep torch's default allow-list, and a
checkpoint holding any type outside the list below still fails.
"""
import functools
from typing import Callable, List, Tuple, Union

import torch

SafeGlobal = Union[Callable, Tuple[Callable, str]]


def checkpoint_globals() -> List[SafeGlobal]:
    """Returns the non-tensor globals found in MMEngine's checkpoints.

    numpy's array reconstruction functions are listed under both module
    names (``numpy.core`` of numpy 1, ``numpy._core`` of numpy 2), so
    checkpoints written with either numpy load.
    """
    import numpy as np
    from mmengine.logging.history_buffer import HistoryBuffer
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy < 2
        from numpy.core import multiarray
    safe: List[SafeGlobal] = [HistoryBuffer, getattr, np.ndarray, np.dtype]
    for name in ('_reconstruct', 'scalar'):
        func = getattr(multiarray, name)
        safe += [(func, f'numpy.core.multiarray.{name}'),
                 (func, f'numpy._core.multiarray.{name}')]
    # numpy >= 1.25 may pickle dtypes through their classes.
    safe += [
        type(np.dtype(t)) for t in (np.bool_, np.int32, np.int64, np.float16,
                                    np.float32, np.float64)
    ]
    return safe


def allow_mmengine_checkpoint_globals() -> None:
    """Wraps MMEngine's local checkpoint loader with the allow-list.

    Idempotent. A no-op when torch has no ``safe_globals`` (torch < 2.5): its
    ``torch.load`` still defaults to ``weights_only=False``.
    """
    if not hasattr(torch.serialization, 'safe_globals'):
        return
    from mmengine.runner.checkpoint import CheckpointLoader
    original = CheckpointLoader._get_checkpoint_loader('local/path.pth')
    if getattr(original, '_mmdet_rankloss_patch', False):
        return

    @functools.wraps(original)
    def load_from_local(filename, map_location):
        with torch.serialization.safe_globals(checkpoint_globals()):
            return original(filename, map_location)

    load_from_local._mmdet_rankloss_patch = True
    CheckpointLoader.register_scheme(
        prefixes='', loader=load_from_local, force=True)
