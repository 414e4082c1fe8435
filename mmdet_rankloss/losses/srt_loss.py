"""Soft Ranking Threshold loss (Yang et al., ICIP 2020).

Paper: "Soft Ranking Threshold Losses for Image Retrieval", section 2, Eq. 1-8.
Anchor ``i``'s distances (itself included, rank 1) are soft-ranked ascending
(Eq. 4); with ``P_i`` positives and ``N_i`` negatives, positives are pushed
below ``T+ = P_i + 1`` and negatives above ``T- = P_i + 2`` (Eq. 3)::

    L = alpha / P_i sum_p phi(R_ip - (T+ - m))
        + (1 - alpha) / N_i sum_n phi((T- + m) - R_in)

with ``phi`` the hinge (Eq. 3, 7: rank margin ``m``) or softplus (Eq. 8). The
hard-threshold term of Eq. 5-6 (``T^+ = P_i / 2``, ``T^- = (B + P_i + 1) / 2``,
``beta = 0.01``) follows a warm-up, on each anchor's hardest positive and
negative as the text says (Eq. 6 as printed takes the easiest)."""
import torch.nn.functional as F
from torch import Tensor

from ..ops.checks import check_flag, check_in_range, check_int, check_positive
from ..ops.soft_rank import soft_rank
from ..optional_mmdet import MODELS, runner_iter
from .deprecation import deprecated_alias
from .pairwise import EmbeddingLoss, retrieval_pairs
from .utils import distance_from_scores, hardest_pairs, negatives_of, zero_loss

__all__ = ['soft_rank_threshold_loss', 'srt_row_losses',
           'SoftRankThresholdLoss', 'srt_loss']


def _check_settings(owner, alpha, margin, soft_margin, hard_weight,
                    temperature):
    """The SRT settings, validated; in the order of the signature."""
    return (check_in_range(owner, 'alpha', alpha, 0.0, 1.0),
            check_positive(owner, 'margin', margin, allow_zero=True),
            check_flag(owner, 'soft_margin', soft_margin),
            check_positive(owner, 'hard_weight', hard_weight,
                           allow_zero=True),
            check_positive(owner, 'temperature', temperature))


def soft_rank_threshold_loss(embeddings: Tensor,
                             labels: Tensor,
                             alpha: float = 0.5,
                             margin: float = 0.0,
                             soft_margin: bool = False,
                             hard_weight: float = 0.0,
                             temperature: float = 0.1) -> Tensor:
    """SRT loss of a retrieval batch, averaged over its anchors.

    Args:
        embeddings (Tensor): L2-normalised embeddings (B, D); distances are
            Euclidean, ``sqrt(2 - 2 cos)``.
        labels (Tensor): Integer class labels (B,).
        alpha (float): Weight of the positive term in [0, 1]; the negative
            term gets ``1 - alpha``. Defaults to 0.5.
        margin (float): Rank margin ``m`` >= 0 (Eq. 7). Defaults to 0.
        soft_margin (bool): Softplus instead of the hinge (Eq. 8). Defaults
            to False.
        hard_weight (float): ``beta`` of the hard-threshold term (Eq. 6);
            0 leaves it out. Defaults to 0.
        temperature (float): Sigmoid temperature of the soft ranks (Eq. 4
            has 1 on the paper's unnormalised features; on the unit sphere,
            where distances lie in [0, 2], ``t`` acts like features of norm
            ``1 / t``). Defaults to 0.1.

    Returns:
        Tensor: Scalar loss, mean over the anchors that have at least one
        positive and one negative (others are skipped); 0 with a graph when
        there is none.

    Raises:
        ValueError: On bad settings, and naming ``embeddings`` when they
            are not finite or not of unit length.
    """
    owner = 'soft_rank_threshold_loss'
    _check_settings(owner, alpha, margin, soft_margin, hard_weight,
                    temperature)
    pairs = retrieval_pairs(embeddings, labels, owner=owner)
    negatives = negatives_of(pairs.positives, pairs.valid)
    rows = pairs.positives.any(1) & negatives.any(1)
    if not bool(rows.any()):
        return zero_loss(embeddings)
    # only rows with both are ranked; each row keeps its own column at 0
    distances = distance_from_scores(pairs.scores[rows]).masked_fill(
        ~pairs.valid[rows], 0.0)
    return srt_row_losses(distances, pairs.positives[rows], negatives[rows],
                          alpha, margin, soft_margin, hard_weight,
                          temperature).mean()


#: Deprecated name of :func:`soft_rank_threshold_loss`
srt_loss = deprecated_alias('srt_loss', soft_rank_threshold_loss)


def srt_row_losses(distances: Tensor, positives: Tensor, negatives: Tensor,
                   alpha: float = 0.5, margin: float = 0.0,
                   soft_margin: bool = False, hard_weight: float = 0.0,
                   temperature: float = 0.1) -> Tensor:
    """SRT loss of each anchor from its row of distances.

    Args:
        distances (Tensor): (Q, B) distances of each anchor to the whole
            batch, its own column included (at distance 0, rank 1).
        positives (Tensor): Bool (Q, B), the anchor's positives (never its
            own column); every row needs one.
        negatives (Tensor): Bool (Q, B), its negatives; every row needs one.
        alpha, margin, soft_margin, hard_weight, temperature: See
            :func:`soft_rank_threshold_loss`.

    Returns:
        Tensor: Per-anchor losses (Q,).
    """
    alpha, margin, soft_margin, hard_weight, temperature = _check_settings(
        'srt_row_losses', alpha, margin, soft_margin, hard_weight,
        temperature)
    num_pos = positives.sum(1).to(distances.dtype)
    num_neg = negatives.sum(1).to(distances.dtype)
    if not bool(((num_pos > 0) & (num_neg > 0)).all()):
        raise ValueError('every row of srt_row_losses needs a positive and a '
                         'negative')
    ranks = soft_rank(distances, temperature, descending=False)
    phi = F.softplus if soft_margin else F.relu
    t_pos = (num_pos + 1 - margin)[:, None]
    t_neg = (num_pos + 2 + margin)[:, None]
    pos_term = (phi(ranks - t_pos) * positives).sum(1) / num_pos
    neg_term = (phi(t_neg - ranks) * negatives).sum(1) / num_neg
    loss = alpha * pos_term + (1 - alpha) * neg_term
    if hard_weight > 0:
        loss = loss + hard_weight * _hard_threshold_term(
            ranks, positives, negatives, num_pos, num_neg, alpha)
    return loss


def _hard_threshold_term(ranks: Tensor, positives: Tensor, negatives: Tensor,
                         num_pos: Tensor, num_neg: Tensor,
                         alpha: float) -> Tensor:
    """Eq. 6 on the batch-hardest samples, per anchor (rows have both)."""
    row_len = ranks.shape[1]
    # hardest_pairs takes similarities: on -ranks, its hardest positive is
    # the largest positive rank and its hardest negative the smallest
    hard = hardest_pairs(-ranks, positives, negatives)
    worst_pos, best_neg = -hard.positive, -hard.negative
    t_hat_pos = num_pos / 2
    t_hat_neg = (row_len + num_pos + 1) / 2
    return (alpha / num_pos * F.relu(worst_pos - t_hat_pos) +
            (1 - alpha) / num_neg * F.relu(t_hat_neg - best_neg))


@MODELS.register_module()
class SoftRankThresholdLoss(EmbeddingLoss):
    """Soft Ranking Threshold loss (Yang et al. 2020) for retrieval batches
    (module docstring), reduced over the anchors with a positive and a
    negative. The defaults are Eq. 3; SRT-F is ``soft_margin=True,
    hard_weight=0.01`` with a warm-up, on P x K = 18 x 4 batches.

    Args:
        alpha (float): Positive-term weight in [0, 1]. Defaults to 0.5.
        margin (float): Rank margin ``m`` >= 0 (Eq. 7). Defaults to 0.
        soft_margin (bool): Softplus instead of the hinge (Eq. 8). Defaults to
            False.
        hard_weight (float): ``beta`` >= 0 of the hard-threshold term (Eq. 6).
            Defaults to 0 (off).
        hard_warmup_iters (int): Training iterations (>= 0) before the hard
            term: MMEngine's ``iter`` when a runner sets it, else this module's
            training-mode calls. Defaults to 0.
        temperature (float): Soft-rank temperature on unit-sphere distances, >
            0, see :func:`soft_rank_threshold_loss`. Defaults to 0.1.
        loss_weight (float): Multiplier of the loss. Defaults to 1.0.
    """
    _repr_keys = ('alpha', 'margin', 'soft_margin', 'hard_weight',
                  'hard_warmup_iters', 'temperature')

    def __init__(self,
                 alpha: float = 0.5,
                 margin: float = 0.0,
                 soft_margin: bool = False,
                 hard_weight: float = 0.0,
                 hard_warmup_iters: int = 0,
                 temperature: float = 0.1,
                 loss_weight: float = 1.0) -> None:
        super().__init__(loss_weight)
        owner = type(self).__name__
        (self.alpha, self.margin, self.soft_margin, self.hard_weight,
         self.temperature) = _check_settings(owner, alpha, margin,
                                             soft_margin, hard_weight,
                                             temperature)
        self.hard_warmup_iters = check_int(owner, 'hard_warmup_iters',
                                           hard_warmup_iters)
        self._calls = 0  # plain int, not a buffer: DDP would overwrite it

    def current_iter(self) -> int:
        """The training iteration that gates the hard term."""
        hub_iter = runner_iter()
        return self._calls if hub_iter is None else int(hub_iter)

    def loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        hard_on = self.hard_weight > 0 and \
            self.current_iter() >= self.hard_warmup_iters
        if self.training:
            self._calls += 1
        return soft_rank_threshold_loss(
            embeddings, labels, self.alpha, self.margin, self.soft_margin,
            self.hard_weight if hard_on else 0.0, self.temperature)
