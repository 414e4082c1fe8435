"""FastAP: average precision by distance quantisation (Cakir et al. 2019).

Paper: "Deep Metric Learning to Rank", CVPR 2019, Eq. 13-14 and section 4.

Each query's retrieval set is the rest of the batch. Squared Euclidean
distances of unit vectors lie in [0, 4]; they are soft-binned into
``L + 1`` triangular bins centred on ``z_l = 4 l / L`` (linear interpolation
between the two nearest centres, Ustinova & Lempitsky 2016), giving
relaxed histograms ``h`` (all items) and ``h+`` (the query's class) and
their cumulative sums ``H``, ``H+``. Then (Eq. 14)::

    FastAP = 1 / N+ * sum_l H+_l h+_l / H_l

and the loss is ``1 - mean FastAP`` over the queries that have a positive.
The gradient is plain autograd: the official port's hand-written backward
ignores the incoming gradient and is N/2 times too large.
"""
from typing import NamedTuple

import torch
from torch import Tensor

from ..ops.checks import check_int
from ..optional_mmdet import MODELS
from .pairwise import EmbeddingLoss, retrieval_pairs
from .utils import sq_distance_from_scores, zero_loss

__all__ = ['FastAPResult', 'fastap', 'fastap_loss', 'FastAPLoss']


class FastAPResult(NamedTuple):
    """Per-query FastAP values."""
    ap: Tensor  # (Q,) FastAP of each query (0 where it has no positive)
    rows: Tensor  # (Q,) bool, queries with at least one positive


def fastap(sq_distances: Tensor,
           positives: Tensor,
           valid: Tensor,
           num_bins: int = 10) -> FastAPResult:
    """FastAP of every query from its squared distances (Eq. 14).

    Args:
        sq_distances (Tensor): Squared distances (Q, N) in [0, 4] (unit
            vectors); values outside are clamped.
        positives (Tensor): Bool (Q, N), the query's neighbours.
        valid (Tensor): Bool (Q, N), items in the query's retrieval set
            (False on the query's own column).
        num_bins (int): Number of bin widths ``L``; the histogram has
            ``L + 1`` centres ``0, 4/L, ..., 4``. Defaults to 10.

    Returns:
        FastAPResult: ``ap`` (Q,) and the ``rows`` that have a positive.
    """
    num_bins = check_int('fastap', 'num_bins', num_bins, 1)
    if sq_distances.shape != positives.shape or \
            sq_distances.shape != valid.shape or sq_distances.dim() != 2:
        raise ValueError(
            'sq_distances, positives and valid must share a (Q, N) shape, '
            f'got {tuple(sq_distances.shape)}, {tuple(positives.shape)}, '
            f'{tuple(valid.shape)}')
    delta = 4.0 / num_bins
    centres = torch.linspace(
        0, 4, num_bins + 1, device=sq_distances.device,
        dtype=sq_distances.dtype)
    d = sq_distances.clamp(0, 4)[..., None]
    pulses = (1 - (d - centres).abs() / delta).clamp(min=0)  # (Q, N, L+1)
    positives = positives & valid
    h_pos = (pulses * positives[..., None]).sum(1)  # (Q, L+1)
    h_all = (pulses * valid[..., None]).sum(1)
    # H and H+: cumulative sums over the L + 1 bins as sums of the
    # histograms under a triangular 0/1 mask (a reduction, deterministic
    # on CUDA; a float cumsum has no deterministic CUDA kernel in torch <
    # 2.6, and a matmul would run in fp16 under autocast)
    upper = torch.ones(num_bins + 1, num_bins + 1, dtype=torch.bool,
                       device=h_pos.device).triu()
    cum_pos, cum_all = ((torch.where(upper, h[..., None], 0.0)).sum(1)
                        for h in (h_pos, h_all))
    filled = cum_all > 0
    ratio = torch.where(filled, cum_pos * h_pos / cum_all.clamp(min=1e-12),
                        torch.zeros_like(cum_all))
    num_pos = positives.sum(1)
    rows = num_pos > 0
    ap = ratio.sum(1) / num_pos.clamp(min=1).to(ratio.dtype)
    return FastAPResult(torch.where(rows, ap, torch.zeros_like(ap)), rows)


def fastap_loss(embeddings: Tensor, labels: Tensor,
                num_bins: int = 10) -> Tensor:
    """``1 - mean FastAP`` over the queries of a batch that have a positive.

    Args:
        embeddings (Tensor): L2-normalised embeddings (B, D): squared
            distances are read as ``2 - 2 cos`` in [0, 4].
        labels (Tensor): Integer class labels (B,).
        num_bins (int): See :func:`fastap`. Defaults to 10.

    Returns:
        Tensor: Scalar loss in [0, 1]; 0 (connected to the graph) when no
        query has a positive.

    Raises:
        ValueError: Naming ``embeddings`` when they are not finite or not
            of unit length (a device-side assertion off the CPU).
    """
    pairs = retrieval_pairs(embeddings, labels, owner='fastap_loss')
    result = fastap(
        sq_distance_from_scores(pairs.scores), pairs.positives, pairs.valid,
        num_bins)
    if not bool(result.rows.any()):
        return zero_loss(embeddings)
    return 1 - result.ap[result.rows].mean()


@MODELS.register_module()
class FastAPLoss(EmbeddingLoss):
    """FastAP loss for retrieval batches (Cakir et al., CVPR 2019).

    ``1 - FastAP`` of each query over the rest of the batch, reduced as
    :class:`~.pairwise.EmbeddingLoss` says (queries with a positive). Use a
    class-balanced sampler (P classes x K images) so that every query has
    positives; for batches larger than memory see
    :class:`~mmdet_rankloss.models.large_batch.LargeBatchRetrievalModel`
    (section 4.1).

    Args:
        num_bins (int): Histogram bins ``L`` over the squared distance range
            [0, 4], >= 1; the paper finds 10 best (Fig. 4b). Defaults to 10.
        loss_weight (float): Multiplier of the loss. Defaults to 1.0.
    """
    _repr_keys = ('num_bins', )

    def __init__(self, num_bins: int = 10, loss_weight: float = 1.0) -> None:
        super().__init__(loss_weight)
        self.num_bins = check_int(type(self).__name__, 'num_bins', num_bins,
                                  1)

    def loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        return fastap_loss(embeddings, labels, self.num_bins)
