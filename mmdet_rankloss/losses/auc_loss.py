"""AUC loss: a relaxed area under the ROC curve (Gajic et al. 2021).

Paper: "Area Under the ROC Curve Maximization for Metric Learning",
section 3, Eq. 5-10 and Table 1.

A pair's score is the cosine similarity ``f`` in ``[t_min, t_max] = [-1, 1]``.
The true and false positive rates at threshold ``s`` are relaxed with a
sigmoid of slope ``r`` (Eq. 6-7)::

    T*(s) = mean_p sigmoid(r (f_p - s)),   F*(s) = mean_n sigmoid(r (f_n - s))

and the ROC area is integrated by the trapezoidal rule over the thresholds
``s_k = t_min + k * delta_s``, ``k = 0..S`` (Eq. 5, 8)::

    A** = sum_{k<S} (T*(s_k) + T*(s_{k+1})) / 2 * (F*(s_k) - F*(s_{k+1}))

The loss is ``1 - A**``, over all positive and negative pairs of the batch
(*batch all*) or over each anchor's hardest positive and hardest negative
(*batch hard*, Eq. 9, the paper's choice). The slope defaults to the
minimiser of Eq. 10 for the step, :func:`auc_sigmoid_slope`.
"""
import functools
import math
from typing import Optional

import numpy as np
import torch
from torch import Tensor

from ..ops.checks import check_choice, check_int, check_positive
from ..optional_mmdet import MODELS
from .pairwise import EmbeddingLoss, retrieval_pairs
from .utils import hardest_pairs, negatives_of, zero_loss

__all__ = [
    'auc_sigmoid_slope', 'relaxed_auc', 'auc_loss', 'AUCLoss', 'AUC_STRATEGIES'
]

AUC_STRATEGIES = ('hard', 'all')
_SECOND_DERIVATIVES = ('analytic', 'finite_difference')


def _num_steps(delta_s: float, t_min: float, t_max: float,
               owner: str = 'auc_loss') -> int:
    check_positive(owner, 'delta_s', delta_s)
    if not t_max > t_min:
        raise ValueError(f'{owner}: t_max ({t_max}) must be > t_min '
                         f'({t_min})')
    steps = (t_max - t_min) / delta_s
    if abs(steps - round(steps)) > 1e-6 * max(1.0, steps):
        raise ValueError(
            f'{owner}: delta_s={delta_s} must divide t_max - t_min = '
            f'{t_max - t_min} '
            f'into a whole number of steps, got {steps:.6g}')
    return int(round(steps))


def _thresholds(delta_s, t_min, t_max, like: Tensor) -> Tensor:
    steps = _num_steps(delta_s, t_min, t_max)
    return torch.linspace(
        t_min, t_max, steps + 1, dtype=like.dtype, device=like.device)


_trapezoid = getattr(np, 'trapezoid', None) or np.trapz  # numpy < 2


def _sigmoid(z):
    return 0.5 * (1 + np.tanh(z / 2))  # no overflow for large |z|


def _eq10_objective(slope: float, delta_s: float, t_min: float,
                    t_max: float, second_derivative: str,
                    num_samples: Optional[int]) -> float:
    """``int (d^2/dx^2 sum_s sigmoid(r (x - s)))^2 dx`` over [t_min, t_max].

    In NumPy float64: the arrays are small and a busy machine makes torch's
    intra-op threads much slower than one thread for them.
    """
    steps = _num_steps(delta_s, t_min, t_max)
    if second_derivative == 'analytic':
        # x on a grid that contains every threshold, >= 24 samples per
        # sigmoid width 1/r (the trapezoidal rule is then accurate to many
        # digits for this smooth integrand); each threshold adds sigmoid''
        # to the samples with |r (x - s)| <= 25 (beyond, it is < 1e-10).
        per_step = max(4, math.ceil(24 * slope * delta_s))
        h = delta_s / per_step
        n = steps * per_step + 1
        half = math.ceil(25 / (slope * h))
        offsets = np.arange(-half, half + 1)
        sig = _sigmoid(slope * h * offsets)
        kernel = slope**2 * sig * (1 - sig) * (1 - 2 * sig)
        index = np.arange(steps + 1)[:, None] * per_step + offsets
        inside = (index >= 0) & (index < n)
        d2 = np.bincount(
            index[inside],
            weights=np.broadcast_to(kernel, index.shape)[inside],
            minlength=n)
        return float(_trapezoid(d2**2, dx=h))
    x = np.linspace(t_min, t_max, num_samples)
    s = np.linspace(t_min, t_max, steps + 1)
    h = x[1] - x[0]
    f = _sigmoid(slope * (x[:, None] - s[None, :])).sum(1)
    d2 = np.gradient(np.gradient(f, h), h)
    return float(_trapezoid(d2**2, dx=h))


@functools.lru_cache(maxsize=64)
def auc_sigmoid_slope(delta_s: float,
                      t_min: float = -1.0,
                      t_max: float = 1.0,
                      second_derivative: str = 'analytic',
                      num_samples: Optional[int] = None) -> float:
    """The sigmoid slope ``r`` for a threshold step: minimiser of Eq. 10.

    Eq. 10 picks the ``r`` whose sum of sigmoids, one per threshold, has the
    least squared second derivative over ``[t_min, t_max]``; this returns the
    non-degenerate local minimum (``r * delta_s`` scanned in [0.5, 4], then a
    golden-section search). ``'analytic'`` gives 12.02, 22.46, 42.14, 97.27 and
    183.5 for steps 0.2, 0.1, 0.05, 0.02 and 0.01 (paper's Table 1: 12.02,
    22.47, 42.2, 101.0, 201.0); ``'finite_difference'`` on 1,000 samples
    matches the table's two smallest steps (201.3, 100.1), presumably how it
    was computed.

    Args:
        delta_s (float): Threshold step; must divide ``t_max - t_min``.
        t_min (float): Lowest threshold. Defaults to -1.0 (cosine).
        t_max (float): Highest threshold. Defaults to 1.0.
        second_derivative (str): ``'analytic'`` or ``'finite_difference'``.
            Defaults to ``'analytic'``.
        num_samples (int, optional): Samples of ``x`` for
            ``'finite_difference'``. Defaults to None (1,000); ``'analytic'``
            ignores it.

    Returns:
        float: The slope ``r``.
    """
    owner = 'auc_sigmoid_slope'
    check_choice(owner, 'second_derivative', second_derivative,
                 _SECOND_DERIVATIVES)
    if second_derivative == 'finite_difference' and num_samples is None:
        num_samples = 1000
    if num_samples is not None:
        check_int(owner, 'num_samples', num_samples, 3)
    _num_steps(delta_s, t_min, t_max, owner)

    def objective(r):
        return _eq10_objective(r, delta_s, t_min, t_max, second_derivative,
                               num_samples)

    grid = [(0.5 + 3.5 * i / 63) / delta_s for i in range(64)]
    values = [objective(r) for r in grid]
    minima = [
        i for i in range(1, len(grid) - 1)
        if values[i] <= values[i - 1] and values[i] <= values[i + 1]
    ]
    if not minima:
        raise ValueError(f'Eq. 10 has no local minimum for r * delta_s in '
                         f'[0.5, 4] (delta_s={delta_s})')
    best = min(minima, key=lambda i: values[i])
    low, high = grid[best - 1], grid[best + 1]
    golden = (math.sqrt(5) - 1) / 2
    a, b = high - golden * (high - low), low + golden * (high - low)
    fa, fb = objective(a), objective(b)
    while high - low > 1e-5 * high:
        if fa < fb:
            high, b, fb = b, a, fa
            a = high - golden * (high - low)
            fa = objective(a)
        else:
            low, a, fa = a, b, fb
            b = low + golden * (high - low)
            fb = objective(b)
    return (low + high) / 2


def relaxed_auc(pos_scores: Tensor,
                neg_scores: Tensor,
                delta_s: float = 0.05,
                slope: Optional[float] = None,
                t_min: float = -1.0,
                t_max: float = 1.0) -> Tensor:
    """The differentiable ROC area ``A**`` of Eq. 8.

    Args:
        pos_scores (Tensor): Scores of the positive pairs (P,).
        neg_scores (Tensor): Scores of the negative pairs (N,).
        delta_s (float): Threshold step. Defaults to 0.05 (the paper's).
        slope (float, optional): Sigmoid slope ``r``. Defaults to None:
            :func:`auc_sigmoid_slope` of ``delta_s``.
        t_min (float): Lowest threshold. Defaults to -1.0.
        t_max (float): Highest threshold. Defaults to 1.0.

    Returns:
        Tensor: Scalar relaxed AUC, in [0, 1] up to the relaxation error.
    """
    if pos_scores.dim() != 1 or neg_scores.dim() != 1 or \
            not pos_scores.numel() or not neg_scores.numel():
        raise ValueError(
            'pos_scores and neg_scores must be non-empty 1-d tensors, got '
            f'shapes {tuple(pos_scores.shape)} and {tuple(neg_scores.shape)}')
    if slope is None:
        slope = auc_sigmoid_slope(delta_s, t_min, t_max)
    slope = check_positive('relaxed_auc', 'slope', slope)
    thresholds = _thresholds(delta_s, t_min, t_max, pos_scores)
    tpr = torch.sigmoid(slope * (pos_scores[:, None] - thresholds)).mean(0)
    fpr = torch.sigmoid(slope * (neg_scores[:, None] - thresholds)).mean(0)
    return ((tpr[:-1] + tpr[1:]) / 2 * (fpr[:-1] - fpr[1:])).sum()


def auc_loss(embeddings: Tensor,
             labels: Tensor,
             strategy: str = 'hard',
             delta_s: float = 0.05,
             slope: Optional[float] = None) -> Tensor:
    """``1 - A**`` of a retrieval batch (Eq. 9 for ``strategy='hard'``).

    Args:
        embeddings (Tensor): L2-normalised embeddings (B, D).
        labels (Tensor): Integer class labels (B,).
        strategy (str): ``'hard'``: one positive pair (the least similar
            positive) and one negative pair (the most similar negative) per
            anchor that has both; ``'all'``: every positive and negative
            pair (ordered pairs, the anchor's own column excluded). Defaults
            to ``'hard'``.
        delta_s (float): Threshold step. Defaults to 0.05.
        slope (float, optional): Sigmoid slope. Defaults to None (Eq. 10).

    Returns:
        Tensor: Scalar loss; 0 with a graph when the batch has no positive
        or no negative pair (no anchor with both, for ``'hard'``).
    """
    check_choice('auc_loss', 'strategy', strategy, AUC_STRATEGIES)
    pairs = retrieval_pairs(embeddings, labels, owner='auc_loss')
    negatives = negatives_of(pairs.positives, pairs.valid)
    if strategy == 'hard':
        hard = hardest_pairs(pairs.scores, pairs.positives, negatives)
        pos, neg = hard.positive[hard.rows], hard.negative[hard.rows]
    else:
        pos, neg = pairs.scores[pairs.positives], pairs.scores[negatives]
    if not pos.numel() or not neg.numel():
        return zero_loss(embeddings)
    return 1 - relaxed_auc(pos, neg, delta_s, slope)


@MODELS.register_module()
class AUCLoss(EmbeddingLoss):
    """AUC loss for retrieval batches (Gajic et al. 2021).

    Pair scores are cosine similarities. With the default batch-hard
    strategy the true positive rate is taken over each anchor's hardest
    positive pair and the false positive rate over its hardest negative,
    for the anchors that have both (:class:`~.pairwise.EmbeddingLoss`). The
    paper samples 64 classes x 2 images per batch.

    Args:
        strategy (str): ``'hard'`` (Eq. 9) or ``'all'``. Defaults to
            ``'hard'``.
        delta_s (float): Threshold step over [-1, 1], > 0, dividing 2 into
            whole steps. Defaults to 0.05 (the paper's, 41 thresholds).
        slope (float, optional): Sigmoid slope ``r``, > 0. Defaults to None:
            the minimiser of Eq. 10 for ``delta_s`` (42.14 for 0.05).
        loss_weight (float): Multiplier of the loss. Defaults to 1.0.
    """
    _repr_keys = ('strategy', 'delta_s', 'slope')

    def __init__(self,
                 strategy: str = 'hard',
                 delta_s: float = 0.05,
                 slope: Optional[float] = None,
                 loss_weight: float = 1.0) -> None:
        super().__init__(loss_weight)
        owner = type(self).__name__
        self.strategy = check_choice(owner, 'strategy', strategy,
                                     AUC_STRATEGIES)
        self.delta_s = check_positive(owner, 'delta_s', delta_s)
        _num_steps(self.delta_s, -1.0, 1.0, owner)
        self.slope = check_positive(owner, 'slope', slope) \
            if slope is not None else auc_sigmoid_slope(self.delta_s)

    def loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        return auc_loss(embeddings, labels, self.strategy, self.delta_s,
                        self.slope)
