"""The negatives' side of the error-driven losses, in O(n log n).

For every positive ``i`` (score ``u_i``) the losses need ``N_FP(i) = sum_{j in
N} H(s_j - u_i)`` and for every negative ``j`` an update ``sum_i w_i H(s_j -
u_i)``, without pairing negatives with positives: the negatives are sorted once
(ties by index; other scores keyed ``-inf``, last: fixed shapes, no read);
``N_FP(i)`` comes from two binary searches of ``u_i +- delta`` and prefix sums
of the sorted scores; a negative's update is piecewise linear in ``s_j``,
``C_p + A_p s_p`` from ``2 P`` increments at the search positions. Cost: one
sort, O(n) passes, O(P log n), a number of kernels independent of ``n``, ``P``.

Every sum is exact up to one rounding of each summand and the result, so
deterministic on every device: prefix sums are integer ``cumsum`` in fixed
point (:func:`fixed_point`, :func:`prefix_sums`) and increments an integer
``index_add_``; no floating-point ``cumsum`` or atomic add."""
from typing import Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from ..ops.device import reads_are_free
from ..ops.stable_order import descending_order

__all__ = ['SortedNegatives', 'fixed_point', 'prefix_sums', 'FIXED_BITS']

#: The fixed-point sums of :func:`fixed_point` stay below ``2 ** 62``
FIXED_BITS = 61


def fixed_point(x: Tensor) -> Tuple[Tensor, Tensor]:
    """``x`` in fixed point along the last dimension, for exact sums.

    Each row is divided by its ``unit`` (``2 ** -61`` times its sum of ``|x|``)
    and rounded to int64: a row's sums are exact integers below ``2 ** 62``,
    ``sum * unit`` in ``x``'s units. Each entry is off by at most half a
    ``unit`` plus the division's rounding, unbiased and odd (sums that cancel
    give exactly 0); the negatives' updates agree with a float64 dense
    evaluation within 7e-15 (1e-14 of the largest entry when trained).

    Args:
        x (Tensor): (..., n) floating point, finite.

    Returns:
        tuple[Tensor, Tensor]: The int64 entries (..., n) and ``unit`` (...,
        1), positive, of ``x``'s dtype.
    """
    mass = torch.linalg.vector_norm(x, 1, -1, keepdim=True)
    # mass * 2 ** -61 (exact) plus twice the smallest normal float, in one
    # kernel: a normal float even when x is all zeros, and the scaled mass
    # itself once the mass exceeds 1e-273 (float64; 1e-12 in float32)
    unit = torch.rsub(mass, torch.finfo(x.dtype).tiny * 2.0,
                      alpha=-2.0**-FIXED_BITS)
    return torch.round(x / unit).to(torch.int64), unit


def prefix_sums(x: Tensor) -> Tensor:
    """Inclusive prefix sums along the last dimension, deterministically.

    The same as ``torch.cumsum(x, -1)`` up to rounding, but with an integer
    ``cumsum`` of :func:`fixed_point` values: the error of ``out[..., k]``
    is below ``(k + 1) 2 ** -62`` times the row's sum of ``|x|``, plus
    ``eps`` times the running sum of ``|x|`` and one rounding of the
    result. A fixed number of kernels, any length.

    Args:
        x (Tensor): (..., n) floating point, finite.

    Returns:
        Tensor: (..., n), ``out[..., k] = sum_{j <= k} x[..., j]``.
    """
    if x.shape[-1] == 0:
        return x.clone()
    q, unit = fixed_point(x)
    return q.cumsum(-1).to(x.dtype) * unit


class SortedNegatives:
    """The negatives sorted, with ``N_FP`` of each positive and the update
    of each negative; fixed shapes (``n``, ``P``), no read of the data.

    Args:
        scores (Tensor): All scores (n,) or any shape, read row-major
            (``n`` its number of elements), detached, finite.
        negatives (Tensor, optional): Bool, broadcastable to ``scores``:
            its scores that are not positives are the negatives. None:
            every score that is not a positive.
        u (Tensor): The positives' scores (P,) in the working precision
            (float64 or float32: every sum is computed in it), P >= 1.
        delta (float): Half-width of the smoothed step, > 0.
        pos_idx (Tensor): The positives' row-major indices (P,).

    Attributes:
        index (Tensor): (n,) a permutation of the scores: the negatives,
            highest score first (ties by index), then every other score.
        nfp (Tensor): ``N_FP(i)`` (P,), in the working precision, >= 0.
    """

    def __init__(self, scores: Tensor, negatives: Optional[Tensor],
                 u: Tensor, delta: float, pos_idx: Tensor) -> None:
        dtype = u.dtype  # the working precision
        # (a mask of rows broadcast here: no (n,) mask is built)
        key = scores.reshape(-1) if negatives is None else torch.where(
            negatives, scores, float('-inf')).reshape(-1)
        key = key.index_fill(0, pos_idx, float('-inf'))
        # -s ascending, +inf for the others (last): the binary searches
        if reads_are_free(key):  # the CPU's faster stable order
            neg_sorted, self.index = descending_order(key)
            neg_sorted = neg_sorted.to(dtype)
        else:  # its device path (no NumPy: torch.compile traces it): the
            # same order (stable both ways), negated into the precision
            key, self.index = torch.sort(key, descending=True, stable=True)
            neg_sorted = torch.mul(key, -1, out=key.new_empty(
                key.shape, dtype=dtype))
        # -s, 0 for the others: the values summed and updated
        self._values = neg_sorted.nan_to_num(posinf=0.0)
        self._two_delta = 2.0 * delta
        # inside the window of i, H(s - u_i) = s / (2 delta) + factor_i
        # (one kernel: 0.5 - u * (1 / (2 delta)))
        self._factor = torch.rsub(u, 0.5, alpha=1 / self._two_delta)
        # bounds[0, i] = hi(i) = #(s > u_i + delta), bounds[1, i] = lo(i)
        # = #(s > u_i - delta): the window of i is [hi(i), lo(i)); a
        # negative at s = u_i - delta has H = 0 in or out of it (the
        # bounds from u on the device: no copy of host memory to it)
        self._bounds = torch.searchsorted(neg_sorted, torch.arange(
            -delta, 1.5 * delta, 2 * delta, dtype=dtype,
            device=u.device)[:, None] - u)
        # sums of s over the windows: differences of exact integer sums
        q, unit = fixed_point(self._values)
        sums = F.pad(q.cumsum(0), (1, 0))[self._bounds]
        # (the integers promoted to the working precision by the ops)
        hi, lo = self._bounds
        nfp = torch.addcmul(hi, lo - hi, self._factor)
        nfp = torch.addcmul(nfp, sums[0] - sums[1], unit,
                            value=1 / self._two_delta)
        self.nfp = nfp.clamp(min=0)

    def update(self, w: Tensor,
               dtype: Optional[torch.dtype] = None) -> Tensor:
        """``sum_i w_i H(s_j - u_i)`` for every score, in :attr:`index` order
        (0 for the entries that are not negatives).

        Along the sorted negatives the update is ``C_p + A_p (-s_p)``: each
        positive adds ``(w_i - w_i factor_i, w_i / (2 delta))`` at ``hi(i)``
        and ``(w_i factor_i, -w_i / (2 delta))`` at ``lo(i)``, and negative
        ``p`` sums the increments after ``p`` (in fixed point: the total less
        the exact prefix sum at ``p``; below every window exactly 0).

        Args:
            w (Tensor): Weights (P,) >= 0, in the working precision.
            dtype (torch.dtype, optional): The result's dtype (rounded on the
                way out). Defaults to the working precision.

        Returns:
            Tensor: (n,) in ``dtype``, in the order of :attr:`index`.
        """
        icpt = w * self._factor
        slope = w / self._two_delta
        # rows: constant, linear; columns: at hi, then at lo
        steps = torch.stack([w - icpt, icpt, slope, -slope]).view(2, -1)
        q, unit = fixed_point(steps)
        # the exact integer increments added up at their positions 0..n
        # (integer atomic adds on CUDA: any order gives the same sums)
        n = self._values.shape[0]
        at = q.new_zeros(2, n + 1).index_add_(1, self._bounds.view(-1), q)
        # negative p reads the increments at positions > p: all of them
        # less those at positions <= p
        at = at.cumsum(1)
        constant, linear = (at[:, n:] - at[:, :n]) * unit
        return torch.addcmul(constant, linear, self._values,
                             out=None if dtype is None else w.new_empty(
                                 n, dtype=dtype))
