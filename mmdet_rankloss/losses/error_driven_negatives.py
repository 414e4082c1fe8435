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
O(P log n); measured in ``docs/rank_sort.md``.
"""
import torch
from torch import Tensor

from ..ops.stable_order import descending_order

__all__ = ['SortedNegatives']


class SortedNegatives:
    """The negatives within reach of the positives, sorted, with
    ``N_FP`` of each positive and the update of each negative.

    Args:
        scores (Tensor): All scores (n,), detached, no NaN.
        negatives (Tensor): Bool (n,), the negatives.
        u (Tensor): The positives' scores (P,), float64, P >= 1.
        delta (float): Half-width of the smoothed step, > 0.

    Attributes:
        index (Tensor): (m,) indices into ``scores`` of the kept negatives,
            highest score first (ties by index).
        nfp (Tensor): ``N_FP(i)`` (P,), float64, >= 0.
    """

    def __init__(self, scores: Tensor, negatives: Tensor, u: Tensor,
                 delta: float) -> None:
        f64 = dict(dtype=torch.float64, device=scores.device)
        threshold = float(u.min()) - delta
        # lowered by a few ulps: the comparison runs in the scores' dtype,
        # and a negative kept needlessly gets H = 0 anyway
        slack = 1e-6 * (1.0 + abs(threshold))
        kept = (negatives & (scores > threshold - slack)).nonzero().squeeze(1)
        neg_sorted, order = descending_order(scores[kept])
        self.index = kept[order]
        self._sorted = neg_sorted.to(torch.float64)  # -s, ascending
        self._u = u
        self._two_delta = 2.0 * delta
        prefix = torch.zeros(self._sorted.numel() + 1, **f64)
        torch.cumsum(-self._sorted, 0, out=prefix[1:])  # sums of s
        # hi(i) = #(s > u_i + delta), lo(i) = #(s >= u_i - delta)
        self._hi = torch.searchsorted(self._sorted, -(u + delta),
                                      side='left')
        self._lo = torch.searchsorted(self._sorted, -(u - delta),
                                      side='right')
        width = (self._lo - self._hi).to(torch.float64)
        nfp = self._hi.to(torch.float64) + (
            (prefix[self._lo] - prefix[self._hi]) - width * u
        ) / self._two_delta + 0.5 * width
        self.nfp = torch.where(self._lo > 0, nfp.clamp(min=0),
                               torch.zeros_like(nfp))

    def update(self, w: Tensor) -> Tensor:
        """``sum_i w_i H(s_j - u_i)`` for every kept negative ``j``.

        Args:
            w (Tensor): Weights (P,), float64.

        Returns:
            Tensor: (m,) float64, in the order of :attr:`index`.
        """
        m = self._sorted.numel()
        f64 = dict(dtype=torch.float64, device=w.device)
        if not m:
            return torch.zeros(0, **f64)
        hi, lo, u, two_delta = self._hi, self._lo, self._u, self._two_delta
        full = torch.zeros(m + 1, **f64)  # H = 1 above u_i + delta
        full[0] = w.sum()
        full.index_add_(0, hi, -w)
        slope = torch.zeros(m + 1, **f64)  # the linear part in the window
        slope.index_add_(0, hi, w / two_delta)
        slope.index_add_(0, lo, -w / two_delta)
        icpt = torch.zeros(m + 1, **f64)
        icpt.index_add_(0, hi, w * (0.5 - u / two_delta))
        icpt.index_add_(0, lo, -w * (0.5 - u / two_delta))
        upd = full.cumsum_(0)[:m]
        upd += slope.cumsum_(0)[:m] * -self._sorted
        upd += icpt.cumsum_(0)[:m]
        return upd
