"""Batch-hard baselines of the AUC paper: triplet and Wilcoxon losses.

* Batch-hard triplet loss (Hermans et al. 2017, "In Defense of the Triplet
  Loss for Person Re-Identification"): for every anchor, its farthest
  positive and closest negative, ``[m + d(a, p) - d(a, n)]_+`` with
  Euclidean distances, margin 0.3 as in the AUC paper (section 4.3.4).
* Wilcoxon-BH (AUC paper Eq. 11, after Calders & Jaroszewicz 2007): the
  Wilcoxon-Mann-Whitney estimate of the ROC area with one sigmoid, over the
  hardest positive and hardest negative similarity of every anchor:
  ``1 - 1/N^2 sum_i sum_j sigmoid(f_p_i - f_n_j)``.

Both differ from mmdet's own ``TripletLoss`` (``hard_mining`` on squared
distances of a fixed P x K layout): they take any labels, skip anchors
without a positive or a negative and exclude the anchor itself by index.
"""
import torch
import torch.nn.functional as F
from torch import Tensor

from ..ops.checks import check_flag, check_positive
from ..optional_mmdet import MODELS
from .pairwise import EmbeddingLoss, retrieval_pairs
from .utils import distance_from_scores, hardest_pairs, negatives_of, zero_loss

__all__ = [
    'batch_hard_triplet_loss', 'BatchHardTripletLoss', 'wilcoxon_loss',
    'WilcoxonLoss'
]


def _hardest(embeddings: Tensor, labels: Tensor, distances: bool,
             owner: str):
    pairs = retrieval_pairs(embeddings, labels, owner=owner)
    scores = -distance_from_scores(pairs.scores) if distances \
        else pairs.scores
    return hardest_pairs(scores, pairs.positives,
                         negatives_of(pairs.positives, pairs.valid))


def batch_hard_triplet_loss(embeddings: Tensor,
                            labels: Tensor,
                            margin: float = 0.3,
                            soft_margin: bool = False) -> Tensor:
    """Batch-hard triplet loss, averaged over anchors with both pair kinds.

    Args:
        embeddings (Tensor): L2-normalised embeddings (B, D); distances are
            Euclidean, ``sqrt(2 - 2 cos)``.
        labels (Tensor): Integer class labels (B,).
        margin (float): Margin ``m`` >= 0. Defaults to 0.3.
        soft_margin (bool): Use ``softplus(d(a, p) - d(a, n))`` instead of
            the hinge (Hermans et al.'s soft margin; ``margin`` unused).
            Defaults to False.

    Returns:
        Tensor: Scalar loss; 0 with a graph when no anchor has both a
        positive and a negative.
    """
    hard = _hardest(embeddings, labels, True, 'batch_hard_triplet_loss')
    if not bool(hard.rows.any()):
        return zero_loss(embeddings)
    # hardest_pairs works on -distance: .positive is -max d(a, p)
    gap = -hard.positive[hard.rows] + hard.negative[hard.rows]
    losses = F.softplus(gap) if soft_margin else (margin + gap).clamp(min=0)
    return losses.mean()


def wilcoxon_loss(embeddings: Tensor, labels: Tensor,
                  slope: float = 1.0) -> Tensor:
    """Wilcoxon-BH loss of Eq. 11.

    Args:
        embeddings (Tensor): L2-normalised embeddings (B, D).
        labels (Tensor): Integer class labels (B,).
        slope (float): Multiplier of the score difference inside the
            sigmoid. Defaults to 1.0 (Eq. 11 as printed).

    Returns:
        Tensor: Scalar loss ``1 - mean_ij sigmoid(slope (f_p_i - f_n_j))``
        over the N anchors that have a positive and a negative (all N x N
        combinations); 0 with a graph when there is none.
    """
    hard = _hardest(embeddings, labels, False, 'wilcoxon_loss')
    if not bool(hard.rows.any()):
        return zero_loss(embeddings)
    pos, neg = hard.positive[hard.rows], hard.negative[hard.rows]
    return 1 - torch.sigmoid(slope * (pos[:, None] - neg[None, :])).mean()


@MODELS.register_module()
class BatchHardTripletLoss(EmbeddingLoss):
    """Batch-hard triplet loss (Hermans et al. 2017), a retrieval baseline.

    ``[m + d(a, p*) - d(a, n*)]_+`` per anchor, ``p*`` its farthest
    positive and ``n*`` its closest negative, reduced as
    :class:`~.pairwise.EmbeddingLoss` says (anchors with both).

    Args:
        margin (float): Margin >= 0. Defaults to 0.3 (AUC paper's baseline).
        soft_margin (bool): Softplus instead of the hinge. Defaults to
            False.
        loss_weight (float): Multiplier of the loss. Defaults to 1.0.
    """
    _repr_keys = ('margin', 'soft_margin')

    def __init__(self,
                 margin: float = 0.3,
                 soft_margin: bool = False,
                 loss_weight: float = 1.0) -> None:
        super().__init__(loss_weight)
        owner = type(self).__name__
        self.margin = check_positive(owner, 'margin', margin,
                                     allow_zero=True)
        self.soft_margin = check_flag(owner, 'soft_margin', soft_margin)

    def loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        return batch_hard_triplet_loss(embeddings, labels, self.margin,
                                       self.soft_margin)


@MODELS.register_module()
class WilcoxonLoss(EmbeddingLoss):
    """Wilcoxon-BH loss (AUC paper Eq. 11), a retrieval baseline.

    The ROC area estimated by one sigmoid over every (hardest positive of
    anchor i, hardest negative of anchor j) combination of the anchors that
    have both (:class:`~.pairwise.EmbeddingLoss`).

    Args:
        slope (float): Sigmoid slope on cosine-similarity differences, > 0.
            Defaults to 1.0 (Eq. 11).
        loss_weight (float): Multiplier of the loss. Defaults to 1.0.
    """
    _repr_keys = ('slope', )

    def __init__(self, slope: float = 1.0, loss_weight: float = 1.0) -> None:
        super().__init__(loss_weight)
        self.slope = check_positive(type(self).__name__, 'slope', slope)

    def loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        return wilcoxon_loss(embeddings, labels, self.slope)
