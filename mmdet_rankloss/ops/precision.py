"""Leaving autocast where a rank loss needs fp32.

Under CUDA autocast (``--amp``) a matrix product runs in fp16 whatever the
dtype of its inputs: casting the inputs to fp32 first is not enough. A
retrieval loss ranks cosine similarities from such a product, and in fp16
a unit vector's similarity with itself rounds to exactly 1.0 and close
neighbours tie (fp16 has 11 significant bits). :func:`autocast_off` is the
region where such a product runs in the dtype of its inputs, as PyTorch's
AMP docs advise ("disable autocast in the region and cast the inputs to
float32").
"""
import contextlib

import torch

__all__ = ['autocast_off']


def autocast_off(device) -> contextlib.AbstractContextManager:
    """A context in which autocast is disabled on ``device``'s type.

    Args:
        device (torch.device | str): The device of the tensors computed
            inside, e.g. ``x.device``.

    Returns:
        contextlib.AbstractContextManager: ``torch.autocast(type,
        enabled=False)``, or a null context for a device type autocast does
        not know (``meta``), where there is nothing to leave.
    """
    device_type = torch.device(device).type
    available = getattr(torch.amp, 'is_autocast_available', None)
    if available is not None and not available(device_type):
        return contextlib.nullcontext()
    try:
        return torch.autocast(device_type, enabled=False)
    except (RuntimeError, ValueError):  # torch < 2.4: no is_autocast_available
        return contextlib.nullcontext()
