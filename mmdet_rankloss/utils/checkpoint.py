"""Lets MMEngine 0.10.7 load its own checkpoints under torch >= 2.6.

torch 2.6 changed ``torch.load``'s default to ``weights_only=True``, which
unpickles only allow-listed types. MMEngine's checkpoints also hold the
runner's message hub (``HistoryBuffer`` objects with numpy arrays and numpy
scalars, and its statistics methods, pickled through ``getattr``), so
``Runner.resume`` and ``load_from`` stop with ``UnpicklingError``.

The fix keeps ``weights_only=True`` and only widens it where MMEngine loads
a checkpoint from a local path: the patch ``checkpoint_loader`` of
:mod:`mmdet_rankloss.patches` replaces MMEngine's local loader with the same
loader run inside ``torch.serialization.safe_globals(checkpoint_globals())``
and through :func:`_load_checked`. Other ``torch.load`` calls in the process
keep torch's default allow-list, and a checkpoint holding any type outside
the list below still fails. This module holds the list and the errors; it
changes nothing in MMEngine itself.

Two more faults get a clear answer (``docs/reliability.md``):

* a checkpoint that holds a pickled object outside the allow-list is not
  executed: :class:`UnsafeCheckpointError` names the file and the global;
* a truncated or corrupt file (a job killed while writing, a partial copy)
  raises :class:`CorruptCheckpointError` naming the file, where torch says
  ``EOFError``, ``[Errno 22] Invalid argument`` or a ``PytorchStreamReader``
  error without the file name. The patch ``atomic_checkpoints`` of
  :mod:`mmdet_rankloss.patches` (on in ``tools/train.py``) makes MMEngine
  write checkpoints to a temporary file renamed into place, so a kill
  during the write leaves the previous checkpoint (which ``last_checkpoint``
  still names) and no truncated file.
"""
import os
import pickle
import struct
from typing import Callable, List, Tuple, Union

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


class UnsafeCheckpointError(pickle.UnpicklingError):
    """A checkpoint holds a pickled object outside the allow-list."""


class CorruptCheckpointError(RuntimeError):
    """A checkpoint file is truncated or otherwise not a torch file."""


def _load_checked(load: Callable, filename: str, *args, **kwargs):
    """``load(filename, ...)`` with its failures translated into errors
    that name the file and say what to do."""
    try:
        return load(filename, *args, **kwargs)
    except FileNotFoundError:
        raise
    except pickle.UnpicklingError as e:
        # "Unsupported global": a pickled class or function, refused;
        # anything else (an unknown opcode, a bad load key) is damage.
        if 'Unsupported global' not in str(e):
            return _corrupt(filename, e)
        detail = next((line.strip() for line in str(e).splitlines()
                       if 'Unsupported global' in line), '')
        raise UnsafeCheckpointError(
            f'checkpoint {filename} holds a pickled object that is not on '
            'the allow-list of torch.load(weights_only=True) or of '
            'mmdet_rankloss.utils.checkpoint_globals(); it was NOT '
            'executed. If you wrote the file yourself and trust it, load '
            'it with torch.load(path, weights_only=False) and save its '
            f'tensors again. torch says: {detail}') from e
    except (EOFError, OSError, RuntimeError, IndexError, KeyError,
            ValueError, TypeError, struct.error) as e:
        # random bytes can read as a legacy pickle whose opcodes break the
        # unpickler itself (a pop from an empty stack, a missing memo key)
        return _corrupt(filename, e)


def _corrupt(filename: str, error: Exception):
    size = os.path.getsize(filename) if os.path.isfile(filename) else 0
    first = str(error).strip().splitlines()[0] if str(error).strip() else \
        'end of file'
    raise CorruptCheckpointError(
        f'checkpoint {filename} ({size} bytes) is truncated or corrupt and '
        f'cannot be loaded ({type(error).__name__}: {first}); a job killed '
        'while writing it leaves such a file: resume from the previous '
        'checkpoint') from error
