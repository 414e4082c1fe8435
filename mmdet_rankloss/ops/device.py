"""Which path a tensor takes: the host's or the device's.

On the CPU a read of a value (``.item()``, ``nonzero``) costs nothing
more than the work itself, and NumPy's sorts beat ``torch.sort``; on a GPU
every read is a wait for the device, and the work is launched as kernels.
The ops of the package therefore have one algorithm and two paths, chosen
here: the host path on CPU tensors, the device path everywhere else and
whenever ``torch.compile`` traces (a read or a NumPy call would break its
graph), so that the device path also runs, and is tested, on the CPU.
"""
import torch
from torch import Tensor

__all__ = ['reads_are_free']


def reads_are_free(tensor: Tensor) -> bool:
    """Whether code on ``tensor`` may read values to the host (and use
    NumPy): a CPU tensor outside a ``torch.compile`` trace."""
    return tensor.device.type == 'cpu' and not torch.compiler.is_compiling()
