"""Sigmoid soft ranks in O(n^2) memory (SRT Eq. 4, SoDeep Eq. 11-12).

The soft rank of element ``i`` of ``x`` (length ``n``, temperature ``t``)::

    r_i = 1 + sum_{k != i} sigmoid((x_k - x_i) / t)     (descending)
    r_i = 1 + sum_{k != i} sigmoid((x_i - x_k) / t)     (ascending)

tends to the exact rank as ``t -> 0`` (ties share their mean rank): SoDeep's
handcrafted sorter (Eq. 12, ``lambda = 1 / t``, plus one) and SRT's Eq. 4 (plus
the other half of ``sigmoid(0)`` for ``k = i``, so that the limit is the exact
rank; same gradients). The pairs are summed in blocks of columns under a memory
budget, forward and in a hand-written backward, so nothing of size O(rows * n *
n) is stored."""
import torch
from torch import Tensor

from .checks import check_int, check_positive
from .ranking import rank_dtype

__all__ = ['soft_rank', 'soft_rank_of']

_MAX_BLOCK_ELEMENTS = 2**22  # 16 MB of fp32 per temporary block


def _block_size(rows: int, n: int, block_size) -> int:
    if block_size is not None:
        return block_size
    return max(1, min(n, _MAX_BLOCK_ELEMENTS // max(1, rows * n)))


class _SoftRank(torch.autograd.Function):
    """Ascending soft ranks of ``s`` (already divided by t and signed)."""

    @staticmethod
    def forward(ctx, s: Tensor, block: int) -> Tensor:
        n = s.shape[-1]
        ranks = torch.full_like(s, 0.5)  # 1 - sigmoid(0) of the k = i term
        for start in range(0, n, block):
            cols = s[..., None, start:start + block]
            ranks += torch.sigmoid(s[..., :, None] - cols).sum(-1)
        ctx.save_for_backward(s)
        ctx.block = block
        return ranks

    @staticmethod
    def backward(ctx, grad: Tensor):
        # d r_i / d s_i = sum_k sigma'(s_i - s_k); d r_i / d s_k = -sigma'(.)
        # so d L / d s_j = g_j * sum_k sigma'(s_j - s_k)
        #                  - sum_i g_i * sigma'(s_i - s_j), sigma' even.
        (s, ) = ctx.saved_tensors
        n = s.shape[-1]
        own = torch.zeros_like(s)
        others = torch.zeros_like(s)
        for start in range(0, n, ctx.block):
            sig = torch.sigmoid(s[..., :, None] - s[..., None,
                                                    start:start + ctx.block])
            dsig = sig * (1 - sig)
            own += dsig.sum(-1)
            others += (dsig * grad[..., None, start:start + ctx.block]).sum(-1)
        return grad * own - others, None


def soft_rank(x: Tensor,
              temperature: float = 1.0,
              descending: bool = True,
              block_size: int = None) -> Tensor:
    """Differentiable sigmoid ranks along the last dimension.

    Args:
        x (Tensor): Values of shape (..., n), ranked along the last
            dimension, batched over the others. fp16/bf16 are computed in
            fp32 (ranks up to n do not fit fp16 precision), fp64 stays fp64.
        temperature (float): Sigmoid temperature ``t`` > 0; the soft ranks
            tend to the exact ranks as ``t -> 0``. SoDeep's ``lambda`` is
            ``1 / t``. Defaults to 1.0 (SRT Eq. 4).
        descending (bool): Rank 1 is the largest value (scores), else the
            smallest (distances). Defaults to True, as
            :func:`~mmdet_rankloss.ops.ranking.exact_rank`.
        block_size (int, optional): Number of columns compared at a time;
            peak extra memory is ``rows * n * block_size`` elements. Defaults
            to None: the largest block under 2**22 elements.

    Returns:
        Tensor: Soft ranks in [1, n], shape of ``x``, fp32 (fp64 for fp64).

    Raises:
        ValueError: On a non-tensor, 0-d, empty or non-floating input,
            non-finite values, ``temperature <= 0`` or ``block_size < 1``.
    """
    if not isinstance(x, Tensor) or x.dim() == 0 or x.shape[-1] == 0:
        got = tuple(x.shape) if isinstance(x, Tensor) else type(x)
        raise ValueError(
            f'x must be a tensor of shape (..., n) with n >= 1, got {got}')
    if not x.is_floating_point():
        raise ValueError(f'x must be floating point, got {x.dtype}')
    temperature = check_positive('soft_rank', 'temperature', temperature)
    if block_size is not None:
        check_int('soft_rank', 'block_size', block_size, 1)
    if x.numel() and not bool(torch.isfinite(x).all()):
        raise ValueError('x contains NaN or inf: soft ranks are undefined')
    n = x.shape[-1]
    s = x.to(rank_dtype(x.dtype)) / temperature
    if descending:
        s = -s
    if x.numel() == 0:
        return s.detach().clone()
    block = _block_size(x.numel() // n, n, block_size)
    return _SoftRank.apply(s, block)


def soft_rank_of(values: Tensor,
                 rows: Tensor,
                 temperature: float = 1.0,
                 within: Tensor = None):
    """Descending sigmoid ranks of a few elements within their rows: ``0.5 +
    sum_k sigmoid((rows_k - value) / t)``, i.e. :func:`soft_rank` of an element
    of its row, at ``M * n`` pairs for ``M`` elements.

    Args:
        values (Tensor): The M elements whose ranks are wanted, shape (M,).
        rows (Tensor): The row each of them is ranked in, shape (M, n).
            Gradients reach both ``values`` and ``rows``.
        temperature (float): Sigmoid temperature ``t`` > 0. Defaults to 1.0.
        within (Tensor, optional): Bool (M, n): also return the rank among
            these elements only, from the same sigmoids. Defaults to None.

    Returns:
        Tensor | tuple[Tensor, Tensor]: Soft ranks (M,) in :func:`rank_dtype`
        of the input; with ``within``, also the ranks among ``within``.
    """
    if not isinstance(values, Tensor) or values.dim() != 1 or \
            not isinstance(rows, Tensor) or rows.dim() != 2 or \
            rows.shape[0] != values.shape[0]:
        raise ValueError(
            'values must have shape (M,) and rows (M, n), got '
            f'{tuple(getattr(values, "shape", ()))} and '
            f'{tuple(getattr(rows, "shape", ()))}')
    temperature = check_positive('soft_rank_of', 'temperature', temperature)
    if within is not None and (not isinstance(within, Tensor)
                               or within.shape != rows.shape):
        raise ValueError(
            f'within must have the rows shape {tuple(rows.shape)}, got '
            f'{tuple(getattr(within, "shape", ()))}')
    work = rank_dtype(rows.dtype)
    pairs = torch.sigmoid(
        (rows.to(work) - values.to(work)[:, None]) / temperature)
    ranks = 0.5 + pairs.sum(-1)
    if within is None:
        return ranks
    return ranks, 0.5 + (pairs * within.to(work)).sum(-1)
