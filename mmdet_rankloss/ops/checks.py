"""Declarative checks of hyper-parameters, shared by every component.

A bad config value fails at build time with one message shape, ``ValueError``
always::

    RaMBOAPLoss: margin must be a finite number >= 0, got -1

Numbers reject ``bool``, NaN and inf; integers reject floats. Checks of data
state their conditions to :func:`check_data`: one read and a ``ValueError`` on
the CPU, a device assertion elsewhere (no read)."""
import math
import numbers
from typing import Optional, Sequence, Tuple

import torch

from .device import reads_are_free

__all__ = [
    'check_number', 'check_positive', 'check_in_range', 'check_int',
    'check_choice', 'check_flag', 'check_data', 'all_finite'
]


def all_finite(x: torch.Tensor) -> torch.Tensor:
    """0-d bool: no NaN or inf in ``x`` (``x * 0`` is 0 for a finite
    ``x``, NaN for NaN and inf: three kernels where
    ``isfinite(x).all()`` takes five)."""
    return x.mul(0).eq(0).all()


def check_data(owner: str, conditions: Sequence[Tuple[object, str]]) -> None:
    """Checks of data, each ``(ok, message)`` with ``ok`` a 0-d bool
    tensor (or a bool known on the host).

    On the CPU the tensors are read together (one ``.tolist()``) and the
    first failed condition raises ``ValueError('owner: message')``. On
    any other device each becomes ``torch._assert_async``: the device
    checks it in order with the computation and nothing is read back, so a
    training step does not wait for the GPU (a failure stops the process
    with the message at the device's next synchronisation, as any device
    assertion does).

    Raises:
        ValueError: On the CPU, for the first condition that fails.
    """
    pending = [(ok, message) for ok, message in conditions
               if isinstance(ok, torch.Tensor)]
    for ok, message in conditions:
        if not isinstance(ok, torch.Tensor) and not ok:
            raise ValueError(f'{owner}: {message}')
    if not pending:
        return
    if reads_are_free(pending[0][0]):
        values = torch.stack([ok.reshape(()) for ok, _ in pending]).tolist()
        for good, (_, message) in zip(values, pending):
            if not good:
                raise ValueError(f'{owner}: {message}')
        return
    for ok, message in pending:
        torch._assert_async(ok, f'{owner}: {message}')


def _fail(owner: str, name: str, requirement: str, value) -> ValueError:
    prefix = f'{owner}: ' if owner else ''
    return ValueError(f'{prefix}{name} must be {requirement}, got {value!r}')


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) \
        and type(value).__name__ != 'bool_' and math.isfinite(value)


def check_number(owner: str,
                 name: str,
                 value,
                 low: Optional[float] = None,
                 high: Optional[float] = None,
                 low_open: bool = False) -> float:
    """``float(value)`` if it is a finite real number within the bounds.

    Args:
        owner (str): The component named in the message (class or
            function name).
        name (str): The parameter.
        value: The value to check.
        low (float, optional): Lower bound. Defaults to None (none).
        high (float, optional): Upper bound (inclusive). Defaults to None.
        low_open (bool): Exclude ``low`` itself. Defaults to False.

    Returns:
        float: The value.

    Raises:
        ValueError: Naming ``owner``, ``name`` and the value.
    """
    ok = _is_real(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        if low is not None and high is not None:
            bound = f' in [{low}, {high}]'
        elif low is not None:
            bound = f' {">" if low_open else ">="} {low:g}'
        elif high is not None:
            bound = f' <= {high:g}'
        else:
            bound = ''
        raise _fail(owner, name, f'a finite number{bound}', value)
    return float(value)


def check_positive(owner: str, name: str, value,
                   allow_zero: bool = False) -> float:
    """A finite number ``> 0`` (``>= 0`` with ``allow_zero``)."""
    return check_number(owner, name, value, low=0, low_open=not allow_zero)


def check_in_range(owner: str, name: str, value, low: float,
                   high: float) -> float:
    """A finite number in ``[low, high]``."""
    return check_number(owner, name, value, low=low, high=high)


def check_int(owner: str, name: str, value, minimum: int = 0) -> int:
    """An ``int`` (not a bool, not a float) ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or value < minimum:
        raise _fail(owner, name, f'an int >= {minimum}', value)
    return int(value)


def check_choice(owner: str, name: str, value, choices: Sequence):
    """One of ``choices`` (compared with ``==``, strings usually)."""
    if not isinstance(value, str) or value not in choices:
        raise _fail(owner, name, f'one of {tuple(choices)}', value)
    return value


def check_flag(owner: str, name: str, value) -> bool:
    """A bool: ``bool('no')`` is True, so strings and numbers are refused."""
    if not isinstance(value, bool) and type(value).__name__ != 'bool_':
        raise _fail(owner, name, 'a bool (True or False)', value)
    return bool(value)
