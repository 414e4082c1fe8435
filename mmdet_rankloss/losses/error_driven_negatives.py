"""The negatives' side of the error-driven losses, in O(n log n).

The positives ``P`` are few, the scores ``n`` many. The error-driven losses
(:mod:`.error_driven`) need, for every positive ``i`` with score ``u_i``,
``N_FP(i) = sum_{j in N} H(s_j - u_i)`` and, for every negative ``j``, an
update ``sum_i w_i H(s_j - u_i)``, with ``H`` the smoothed step of
half-width ``delta`` (:func:`~.error_driven.smoothed_step`). Neither pairs
the negatives with the positives:

* only the negatives with ``s_j >= min(u) - delta`` can have ``H > 0``
  (the authors' ``relevant_bg``; the others get ``H = 0`` from every
  positive, hence a zero update); they are sorted once
  (:func:`~mmdet_rankloss.ops.stable_order.descending_order`);
* ``N_FP(i)`` is the count of negatives above ``u_i + delta`` plus the
  linear part over the window ``[u_i - delta, u_i + delta]``, from two
  binary searches of ``u_i +- delta`` and prefix sums of the sorted scores;
* the update of a negative is piecewise linear in ``s_j`` with breakpoints
  ``u_i +- delta``: along the sorted negatives it is ``F_p + a_p s_p +
  b_p``, where ``F``, ``a`` and ``b`` are cumulative sums of ``P``
  increments placed at the same binary-search positions.

So a call costs one sort of the relevant negatives plus O(n) passes and
O(P log n); measured in ``docs/losses.md``.

Every sum here is deterministic on every device, so that
``randomness.deterministic=True`` (``torch.use_deterministic_algorithms``)
accepts it on CUDA in torch 2.0 to 2.13, and two runs agree bit for bit
without it: no floating-point ``cumsum`` (no deterministic CUDA kernel
before torch 2.6) but :func:`prefix_sums`, block sums as triangular matrix
products; no ``index_add_`` (atomic adds on CUDA) but the ``P`` increments
sorted by position, their prefix sums read back at each negative's
position (``searchsorted``). Counts are integers.
"""
import torch
import torch.nn.functional as F
from torch import Tensor

from ..ops.stable_order import descending_order

__all__ = ['SortedNegatives', 'prefix_sums', 'SCAN_BLOCK']

#: Block length of :func:`prefix_sums`: each element costs ``2 B`` flops
#: (on the 2-core CPU here, 2e5 to 2e6 elements: 8 to 64 equally fast
#: within the noise, 256 and 1024 slower)
SCAN_BLOCK = 32


def prefix_sums(x: Tensor) -> Tensor:
    """Inclusive prefix sums along the last dimension, deterministically.

    The same as ``torch.cumsum(x, -1)`` up to rounding (relative to the
    running sum of ``|x|``: at most about ``SCAN_BLOCK`` ulps per level,
    measured 4e-14 in float64 at 2e6 elements) but with no ``cumsum``
    kernel: ``x`` is cut into blocks of :data:`SCAN_BLOCK`, each block's
    sums are one product with a triangular matrix of ones, and the block
    totals are summed the same way, recursively (``log_B n`` levels). Memory
    O(n); a matrix product of the inputs' dtype (autocast must be off for
    float32 on CUDA: the callers leave it).

    Args:
        x (Tensor): (..., n) floating point.

    Returns:
        Tensor: (..., n), ``out[..., k] = sum_{j <= k} x[..., j]``.
    """
    n, lead = x.shape[-1], x.shape[:-1]
    block = min(n, SCAN_BLOCK)
    if block == 0:
        return x.clone()
    # tri[j, k] = 1 for j <= k: (row of a block) @ tri = its prefix sums
    tri = torch.ones(block, block, dtype=x.dtype, device=x.device).triu_()
    if n <= block:
        return x @ tri
    num_blocks = -(-n // block)
    blocks = x.new_zeros(lead + (num_blocks, block))
    blocks.view(lead + (-1, ))[..., :n] = x
    blocks = blocks @ tri
    offsets = torch.zeros_like(blocks[..., 0])  # sums before each block
    offsets[..., 1:] = prefix_sums(blocks[..., :-1, -1])
    blocks += offsets[..., None]
    return blocks.view(lead + (-1, ))[..., :n]


class SortedNegatives:
    """The negatives within reach of the positives, sorted, with
    ``N_FP`` of each positive and the update of each negative.

    Args:
        scores (Tensor): All scores (n,), detached, no NaN.
        negatives (Tensor): Bool (n,), the negatives.
        u (Tensor): The positives' scores (P,) in the working precision
            (float64 or float32: every sum is computed in it), P >= 1.
        delta (float): Half-width of the smoothed step, > 0.

    Attributes:
        index (Tensor): (m,) indices into ``scores`` of the kept negatives,
            highest score first (ties by index).
        nfp (Tensor): ``N_FP(i)`` (P,), in the working precision, >= 0.
    """

    def __init__(self, scores: Tensor, negatives: Tensor, u: Tensor,
                 delta: float) -> None:
        dtype = u.dtype  # the working precision
        threshold = float(u.min()) - delta
        # lowered by a few ulps: the comparison runs in the scores' dtype,
        # and a negative kept needlessly gets H = 0 anyway
        slack = 1e-6 * (1.0 + abs(threshold))
        kept = (negatives & (scores > threshold - slack)).nonzero().squeeze(1)
        neg_sorted, order = descending_order(scores[kept])
        self.index = kept[order]
        self._sorted = neg_sorted.to(dtype)  # -s, ascending
        self._u = u
        self._two_delta = 2.0 * delta
        prefix = self._sorted.new_zeros(self._sorted.numel() + 1)
        prefix[1:] = prefix_sums(-self._sorted)  # sums of s
        # hi(i) = #(s > u_i + delta), lo(i) = #(s >= u_i - delta)
        self._hi = torch.searchsorted(self._sorted, -(u + delta),
                                      side='left')
        self._lo = torch.searchsorted(self._sorted, -(u - delta),
                                      side='right')
        width = (self._lo - self._hi).to(dtype)
        nfp = self._hi.to(dtype) + (
            (prefix[self._lo] - prefix[self._hi]) - width * u
        ) / self._two_delta + 0.5 * width
        self.nfp = torch.where(self._lo > 0, nfp.clamp(min=0),
                               torch.zeros_like(nfp))

    def update(self, w: Tensor) -> Tensor:
        """``sum_i w_i H(s_j - u_i)`` for every kept negative ``j``.

        Along the sorted negatives the update is ``F_p + a_p s_p + b_p``:
        ``F`` (the positives with ``H = 1``), ``a`` and ``b`` (the linear
        part) change only at the ``2 P`` positions ``hi(i)`` and ``lo(i)``.
        The increments are ordered by position (stable sort) and negative
        ``p`` reads, from a table of ``2 P + 1`` entries, the sum of those
        at positions ``<= p`` (``F`` starts at ``sum w``) or, equally, minus
        the sum of those after: whichever adds less absolute mass, so that
        the rounding is that of the smaller sum (in float32, on partly
        trained rankings of 2e5 and 2e6 scores with 500 positives, this
        took the largest relative error of an entry from 3e-4 to 1e-6).

        Args:
            w (Tensor): Weights (P,) >= 0, in the working precision.

        Returns:
            Tensor: (m,) in the working precision, in the order of
            :attr:`index`.
        """
        m = self._sorted.numel()
        if not m:
            return w.new_zeros(0)
        hi, lo, u, two_delta = self._hi, self._lo, self._u, self._two_delta
        icpt = w * (0.5 - u / two_delta)
        # rows: the (F, a, b) increments; columns: at hi, then at lo
        steps = torch.cat([torch.stack([-w, w / two_delta, icpt]),
                           torch.stack([torch.zeros_like(w), -w / two_delta,
                                        -icpt])], 1)
        positions, order = torch.sort(torch.cat([hi, lo]), stable=True)
        steps = steps[:, order]
        # the sums of the first k increments, of the others, and the
        # absolute mass of the first k, k = 0..2P
        scans = prefix_sums(torch.cat([steps, steps.flip(1), steps.abs()]))
        before = F.pad(scans[:3], (1, 0))
        after = F.pad(scans[3:6].flip(1), (0, 1))
        mass = F.pad(scans[6:], (1, 0))
        start = torch.stack([w.sum(), w.new_zeros(()), w.new_zeros(())])
        table = torch.where(mass <= mass[:, -1:] / 2,
                            start[:, None] + before, -after)
        # read[p] = the number of increments at positions <= p (integers)
        read = torch.zeros(m + 1, dtype=positions.dtype, device=w.device)
        read.scatter_add_(0, positions, torch.ones_like(positions))
        full, slope, icpt = table.t().contiguous().index_select(
            0, read[:m].cumsum(0)).unbind(1)
        return full + slope * -self._sorted + icpt
