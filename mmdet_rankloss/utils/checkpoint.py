"""Lets MMEngine 0.10.7 load its own checkpoints under torch >= 2.6.

torch 2.6 loads with ``weights_only=True``, which refuses the message hub of
MMEngine's checkpoints (``HistoryBuffer``, numpy arrays and scalars,
``getattr``). The patch ``checkpoint_loader`` (:mod:`mmdet_rankloss.patches`)
runs MMEngine's local loader inside
``torch.serialization.safe_globals(checkpoint_globals())`` and through
:func:`load_checked`; other ``torch.load`` calls keep torch's list. A pickled
object outside the list raises :class:`UnsafeCheckpointError`, a truncated or
corrupt file :class:`CorruptCheckpointError`, both naming the file; errors not
from the file's bytes (a missing device, out of memory, a file that cannot be
opened) are raised as torch raised them (docs/reliability.md#checkpoints)."""
import os
import pickle
import struct
import zipfile
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


def load_checked(load: Callable, filename: str, *args, **kwargs):
    """``load(filename, ...)`` with its failures translated into errors
    that name the file and say what to do."""
    try:
        return load(filename, *args, **kwargs)
    except (FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except pickle.UnpicklingError as e:
        # "Unsupported global": a pickled class or function, refused;
        # anything else (an unknown opcode, a bad load key) is damage.
        if 'Unsupported global' not in str(e):
            return _corrupt_or_raise(filename, e)
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
        return _corrupt_or_raise(filename, e)


# torch's words for a file it cannot read as a checkpoint.
_DAMAGE = ('PytorchStreamReader', 'Invalid magic number',
           'invalid load key', 'unpickling stack underflow')
# torch's words for a device or memory problem: the file may be fine.
_DEVICE_OR_MEMORY = ('out of memory', "can't allocate memory",
                     'Attempting to deserialize object on',
                     'is_available() is False', 'device_count()',
                     'Storage device not recognized',
                     "don't know how to restore data location",
                     'CUDA error', 'CUDA driver', 'no CUDA GPUs')


def _corrupt_or_raise(filename: str, error: Exception):
    """Raises :class:`CorruptCheckpointError` if ``error`` (raised while
    loading ``filename``) says the file is damaged, else ``error`` itself.

    Only damage is a corrupt checkpoint: an out-of-memory error or a
    ``map_location`` naming a device that is not there (``'cuda'`` on a
    CPU-only machine) is raised as torch raised it, so that nobody throws
    away a good checkpoint. Damage is what torch's message says it is, or,
    for any other error, a file that is not an intact zip archive (the
    format of ``torch.save``; every member's CRC is checked): an error
    while loading an intact archive does not come from its bytes.
    """
    message = str(error)
    if _is_out_of_memory(error) or any(words in message
                                       for words in _DEVICE_OR_MEMORY):
        raise error
    if not any(words in message for words in _DAMAGE) and _intact_zip(
            filename):
        raise error
    return _corrupt(filename, error)


def _is_out_of_memory(error: Exception) -> bool:
    import torch
    kinds = tuple(
        kind for kind in (getattr(torch, 'OutOfMemoryError', None),
                          getattr(torch.cuda, 'OutOfMemoryError', None))
        if isinstance(kind, type))
    return isinstance(error, (MemoryError, ) + kinds)


def _intact_zip(filename: str) -> bool:
    """Whether ``filename`` is a zip archive whose members all read back
    with their CRCs (reads the whole file)."""
    try:
        with zipfile.ZipFile(filename) as archive:
            return archive.testzip() is None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError,
            struct.error):
        return False


def _corrupt(filename: str, error: Exception):
    size = os.path.getsize(filename) if os.path.isfile(filename) else 0
    first = str(error).strip().splitlines()[0] if str(error).strip() else \
        'end of file'
    raise CorruptCheckpointError(
        f'checkpoint {filename} ({size} bytes) is truncated or corrupt and '
        f'cannot be loaded ({type(error).__name__}: {first}); a job killed '
        'while writing it leaves such a file: resume from the previous '
        'checkpoint') from error
