"""The stable descending order of scores (ties by index), at unstable-sort
cost.

:func:`descending_order` returns exactly ``torch.sort(-values, stable=True)``.
Off the CPU it is that call. On the CPU it sorts unstably and puts only the
runs of equal values in index order; float32 (and fp16/bf16) rows of at least
``_NUMPY_MIN_LENGTH`` elements are sorted by NumPy on distinct 64-bit keys
(:func:`order_keys`: the value's bits, mapped to descending order, above the
index). Timings: docs/losses.md. :func:`column_orders` derives the orders of a
matrix's columns from its flattening's order in O(n) (the AP loss's ``L_mAP``
and ``L_APC``)."""
from typing import Tuple

import numpy as np
import torch
from torch import Tensor

from .device import reads_are_free

_NUMPY_MIN_LENGTH = 4096
_SIGN_FLIP = 0x7FFFFFFF
_LOW_32 = 0xFFFFFFFF

__all__ = [
    'descending_order', 'descending_indices', 'ranks_from_order',
    'order_image', 'order_keys', 'column_orders'
]


def descending_order(values: Tensor) -> Tuple[Tensor, Tensor]:
    """Sort along the last dimension, largest first, ties by index.

    Args:
        values (Tensor): Shape (..., n), no NaN (``-inf``/``+inf`` are fine).

    Returns:
        tuple[Tensor, Tensor]: The ascending sort of ``-values`` (so the
        values negated, largest first) and the indices, exactly as
        ``torch.sort(-values, stable=True)`` returns them.
    """
    n = values.shape[-1]
    if not reads_are_free(values):
        # the run fix-up below reads from the device (are there ties,
        # where), and on a GPU each read is a wait
        return torch.sort(-values, dim=-1, stable=True)
    if (_NUMPY_MIN_LENGTH <= n < 2**31 and values.dtype
            in (torch.float32, torch.float16, torch.bfloat16)):
        return _keyed_numpy_order(values)
    neg_sorted, order = torch.sort(-values, dim=-1)
    if n < 2:
        return neg_sorted, order
    equal = neg_sorted[..., 1:] == neg_sorted[..., :-1]
    if not bool(equal.any()):
        return neg_sorted, order
    equal = equal.reshape(-1, n - 1)
    flat = order.reshape(-1, n)  # a view: sort outputs are contiguous
    in_run = torch.zeros_like(flat, dtype=torch.bool)
    in_run[:, 1:] |= equal
    in_run[:, :-1] |= equal
    starts = in_run.clone()
    starts[:, 1:] &= ~equal
    row, col = in_run.nonzero(as_tuple=True)  # runs are contiguous
    run = torch.cumsum(starts[row, col], 0)
    # (run, index) keys are unique: sorting them orders each run by index
    # and keeps the runs where they are
    flat[row, col] = torch.sort(run * n + flat[row, col]).values % n
    return neg_sorted, order


def descending_indices(values: Tensor) -> Tensor:
    """The order of :func:`descending_order` alone (the column at each
    place): on a device one stable descending sort (equal values keep
    their index order), on the CPU the NumPy path.

    Args:
        values (Tensor): Shape (..., n), no NaN.

    Returns:
        Tensor: int64 indices of the values' shape.
    """
    if reads_are_free(values):
        return descending_order(values)[1]
    return torch.sort(values, dim=-1, descending=True, stable=True).indices


def ranks_from_order(order: Tensor, positions: Tensor) -> Tensor:
    """Integer ranks (1 = first in ``order``) by one scatter.

    Args:
        order (Tensor): Indices (..., n), e.g. :func:`descending_indices`.
        positions (Tensor): ``1..n`` (n,) in the dtype of the ranks.

    Returns:
        Tensor: Ranks of ``order``'s shape in ``positions``' dtype.
    """
    return torch.empty(order.shape, dtype=positions.dtype,
                       device=order.device).scatter_(
                           -1, order, positions.expand(order.shape))


def column_orders(neg_sorted: Tensor, order: Tensor,
                  columns: int) -> Tuple[Tensor, Tensor]:
    """:func:`descending_order` of each column of an (n, columns) matrix from
    that of its flattening: a stable partition of the flat order by column
    (flat index ``i * columns + c`` ascends with the row ``i``, so ties stay
    ordered by index), no comparison of values.

    Args:
        neg_sorted (Tensor): The flat sort's values (..., n * columns): the
            negated values, largest value first.
        order (Tensor): Its flat indices, same shape.
        columns (int): Number of columns, >= 1.

    Returns:
        tuple[Tensor, Tensor]: ``descending_order(matrix.t())``: values and row
        indices of shape (columns, n).
    """
    flat, values = order.reshape(-1), neg_sorted.reshape(-1)
    if reads_are_free(flat) and columns <= 256:
        # NumPy: faster integer ops than torch's here, and its stable sort
        # of 8-bit integers is a radix sort, O(n)
        flat_np = flat.numpy()
        by_column = np.argsort((flat_np % columns).astype(np.uint8),
                               kind='stable')
        rows = torch.from_numpy(np.take(flat_np, by_column) // columns)
        by_column = torch.from_numpy(by_column)
    else:
        by_column = torch.sort(flat % columns, stable=True).indices
        rows = flat[by_column].div_(columns, rounding_mode='floor')
    return (values.index_select(0, by_column).view(columns, -1),
            rows.view(columns, -1))


def order_keys(values: Tensor, index: Tensor) -> Tensor:
    """int64 keys ordered like (value descending, index ascending).

    The fp32 bit pattern of the value, read as a signed integer with the 31
    low bits of negative numbers flipped (which orders all floats), is the
    high word; the complemented index is the low word. So the keys of a
    row are distinct and a larger key means an earlier place in the
    descending order with ties by index.

    Args:
        values (Tensor): Scores, no NaN; cast to fp32 (exact for fp16/bf16).
        index (Tensor): Indices (int64, below 2**32), broadcastable to
            ``values``.

    Returns:
        Tensor: int64 keys of the broadcast shape.
    """
    # + 0.0 turns -0.0 into +0.0: the two are equal scores, tied by index
    key = order_image(values.to(torch.float32) + 0.0).to(torch.int64)
    key <<= 32
    return key | (_LOW_32 - index)


def order_image(values: Tensor) -> Tensor:
    """int32 numbers ordered like fp32 values: the bit pattern read as a
    signed integer, the 31 low bits of negative numbers flipped. Distinct
    values map to distinct numbers, -0.0 one below +0.0 (add 0.0 first
    where a -0.0 must tie with +0.0).

    Args:
        values (Tensor): fp32, no NaN (``-inf``/``+inf`` are fine).

    Returns:
        Tensor: int32 of the values' shape, in three elementwise ops.
    """
    bits = values.view(torch.int32)
    flip = bits >> 31
    flip &= _SIGN_FLIP
    return flip.bitwise_xor_(bits)


def _keyed_numpy_order(values: Tensor) -> Tuple[Tensor, Tensor]:
    """:func:`descending_order` of CPU float rows through NumPy int64 keys
    (:func:`order_keys`, negated so that ascending is the wanted order)."""
    shape, n = values.shape, values.shape[-1]
    key = order_keys(values.detach().reshape(-1, n),
                     torch.arange(n, dtype=torch.int64))
    key.neg_()
    key = torch.from_numpy(np.sort(key.numpy(), axis=-1))
    key.neg_()
    order = (key & _LOW_32).neg_().add_(_LOW_32)  # in place: no new buffer
    key >>= 32  # arithmetic shift: the monotone integer of the value
    key ^= (key >> 63) & _SIGN_FLIP
    neg_sorted = -key.to(torch.int32).view(torch.float32)
    return (neg_sorted.to(values.dtype).reshape(shape),
            order.reshape(shape))
