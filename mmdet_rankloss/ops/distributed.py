"""Global ranking across processes: gather with a gradient path back.

Rank losses are non-decomposable: ranking each process's local batch is not
the same loss as ranking the global batch. :func:`gather_for_ranking`
concatenates a tensor from every process (in rank order, sizes may differ
along dim 0) so the loss can rank the global batch, and routes the gradient
of the local slice back to the local input.

Gradient convention: every process computes the same global loss L on the
same gathered data, so process r holds dL/dx_r for its own slice. DDP then
*averages* parameter gradients over the W processes, which would make the
update W times smaller than single-process training on the concatenated
batch. The backward therefore returns ``W * dL/dx_r``; after DDP's averaging
the parameter gradient equals the single-process one exactly (tested with
two gloo processes in ``tests/test_ops/test_distributed.py``).
"""
from typing import List, Tuple

import torch
import torch.distributed as dist
from torch import Tensor

__all__ = ['gather_for_ranking', 'get_dist_info_safe']


def get_dist_info_safe() -> Tuple[int, int]:
    """(rank, world_size) of the default process group, (0, 1) without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


_HOST_GROUP = {}


def _host_group():
    """A process group that gathers CPU tensors: the default one when its
    backend is gloo, else a gloo group over the same processes, made once
    (every process calls this at the same point, as a collective must)."""
    if dist.get_backend() == 'gloo':
        return None
    key = dist.get_world_size()
    if key not in _HOST_GROUP:
        _HOST_GROUP[key] = dist.new_group(backend='gloo')
    return _HOST_GROUP[key]


def _all_gather_sizes(n: int, world: int) -> List[int]:
    """Every process's dim-0 size. A size is a shape, known on the host:
    it is exchanged between the hosts (gloo), so no process waits for its
    device (a size gathered on a GPU would be read back from it)."""
    size = torch.full((1, ), n, dtype=torch.long)
    sizes = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes, size, group=_host_group())
    return [int(s) for s in sizes]


def _all_gather_padded(x: Tensor, sizes: List[int]) -> Tensor:
    if x.dtype == torch.bool:  # gloo cannot gather bool
        return _all_gather_padded(x.to(torch.uint8), sizes).bool()
    longest = max(sizes)
    padded = x.new_zeros((longest, ) + tuple(x.shape[1:]))
    padded[:x.shape[0]] = x
    parts = [torch.empty_like(padded) for _ in sizes]
    dist.all_gather(parts, padded.contiguous())
    return torch.cat([p[:s] for p, s in zip(parts, sizes)], dim=0)


class _GatherForRanking(torch.autograd.Function):

    @staticmethod
    def forward(ctx, x, sizes, rank, world):
        ctx.start = sum(sizes[:rank])
        ctx.stop = ctx.start + sizes[rank]
        ctx.world = world
        return _all_gather_padded(x, sizes)

    @staticmethod
    def backward(ctx, grad):
        return grad[ctx.start:ctx.stop] * ctx.world, None, None, None


def gather_for_ranking(*tensors: Tensor) -> Tuple[Tuple[Tensor, ...], int]:
    """Concatenate tensors from every process along dim 0.

    Without an initialised process group (or with one process) the inputs
    are returned unchanged. Tensors that require grad keep a gradient path
    to the local part (see the module docstring for the ``W`` factor);
    others (labels, weights) are gathered as data.

    Args:
        *tensors (Tensor): Tensors with the same size along dim 0 on this
            process (e.g. scores (N, C) and labels (N,)); that size may
            differ between processes.

    Returns:
        tuple: ``(gathered_tensors, offset)`` where ``offset`` is the first
        row of this process's part in the gathered tensors.
    """
    rank, world = get_dist_info_safe()
    if world == 1:
        return tensors, 0
    n = tensors[0].shape[0]
    for t in tensors:
        if t.shape[0] != n:
            raise ValueError('gather_for_ranking needs equal dim-0 sizes, got '
                             f'{[tuple(x.shape) for x in tensors]}')
    sizes = _all_gather_sizes(n, world)
    out = []
    for t in tensors:
        if t.requires_grad:
            out.append(_GatherForRanking.apply(t, sizes, rank, world))
        else:
            out.append(_all_gather_padded(t.detach(), sizes))
    return tuple(out), sum(sizes[:rank])
