"""SoDeep losses: rank metrics through a differentiable sorter.

Paper: Engilberge et al., "SoDeep: a Sorting Deep net to learn ranking loss
surrogates", CVPR 2019, section 3.2, Eq. 4, 7, 9-10. A sorter
(:mod:`mmdet_rankloss.networks.sorters`), frozen by default, replaces the exact
ranking of rows of its length ``d`` (shorter rows: ``pad_value``, else a
``ValueError``): :class:`SoDeepSpearmanLoss` (Eq. 4, ``1 - Spearman`` of
``(pred, target)`` rows), :class:`SoDeepAPLoss` (Eq. 7) and
:class:`SoDeepRecallLoss` (Eq. 9-10, hard negatives), retrieval losses on each
query's similarities to the other ``B - 1`` items."""
from typing import Optional, Union

import torch.nn as nn
from torch import Tensor

from ..networks.sorter_ranking import SorterRankingBase
from ..ops.checks import check_positive
from ..ops.ranking import rank_dtype
from ..optional_mmdet import MODELS
from .deprecation import deprecated_alias
from .pairwise import EmbeddingLoss, retrieval_pairs
from .utils import negatives_of, zero_loss

__all__ = [
    'average_ranks', 'sodeep_spearman_loss', 'sodeep_ap_loss',
    'sodeep_recall_loss', 'SoDeepSpearmanLoss', 'SoDeepAPLoss',
    'SoDeepRecallLoss', 'spearman_loss'
]


def average_ranks(target: Tensor) -> Tensor:
    """Exact descending ranks of each row; ties share their mean rank."""
    greater = (target[..., None, :] > target[..., :, None]).sum(-1)
    equal = (target[..., None, :] == target[..., :, None]).sum(-1)
    return (1 + greater + (equal - 1) / 2).to(rank_dtype(target.dtype))


def sodeep_spearman_loss(ranks: Tensor, target: Tensor) -> Tensor:
    """``1 - Spearman`` of each row with predicted ranks (Eq. 2, 4): the
    loss of :class:`SoDeepSpearmanLoss` given the sorter's ranks.

    ``6 |ranks - rk(target)|^2 / (d (d^2 - 1))``, i.e. Eq. 4 scaled so that
    exact ranks give ``1 - r_s`` of Eq. 2 (0 for the same order, 2 for the
    reverse; with ties in ``target`` Eq. 2 is the usual approximation).

    Args:
        ranks (Tensor): Predicted ranks (N, d) in rank positions.
        target (Tensor): Ground-truth scores (N, d), higher first.

    Returns:
        Tensor: Scalar, mean over the N rows.
    """
    d = target.shape[-1]
    diff = ranks - average_ranks(target)
    return (6 * diff.pow(2).sum(-1) / (d * (d * d - 1))).mean()


#: Deprecated name of :func:`sodeep_spearman_loss`
spearman_loss = deprecated_alias('spearman_loss', sodeep_spearman_loss)


def sodeep_ap_loss(ranks: Tensor, positives: Tensor) -> Tensor:
    """Eq. 7: the (normalised) predicted ranks of the positives.

    Args:
        ranks (Tensor): Predicted ranks (Q, L) in rank positions.
        positives (Tensor): Bool (Q, L).

    Returns:
        Tensor: Scalar: mean over rows with a positive of the mean of
        ``rank / L`` over their positives; 0 when there is none.
    """
    num_pos = positives.sum(1)
    rows = num_pos > 0
    if not bool(rows.any()):
        return zero_loss(ranks)
    per_row = (ranks * positives).sum(1) / num_pos.clamp(min=1)
    return (per_row[rows] / ranks.shape[1]).mean()


def sodeep_recall_loss(ranks: Tensor,
                       positives: Tensor,
                       negatives: Tensor,
                       margin: float = 1.0) -> Tensor:
    """Eq. 9-10, the rank triplet loss with hard negatives, several positives.

    For every positive ``p`` of a row: ``[alpha + r_p - r_c]_+`` with ``c``
    the row's best-ranked negative (the max over negatives of Eq. 10);
    averaged over the row's positives, then over the rows that have a
    positive and a negative. Ranks are divided by the row length ``L``.

    Args:
        ranks (Tensor): Predicted ranks (Q, L) in rank positions.
        positives (Tensor): Bool (Q, L).
        negatives (Tensor): Bool (Q, L).
        margin (float): ``alpha`` in rank positions. Defaults to 1.0 (a
            positive must come at least one place before every negative).

    Returns:
        Tensor: Scalar loss; 0 when no row has both.
    """
    rows = positives.any(1) & negatives.any(1)
    if not bool(rows.any()):
        return zero_loss(ranks)
    length = ranks.shape[1]
    ranks, positives = ranks[rows] / length, positives[rows]
    best_neg = ranks.masked_fill(~negatives[rows], float('inf')).min(1).values
    hinge = (margin / length + ranks - best_neg[:, None]).clamp(min=0)
    return ((hinge * positives).sum(1) / positives.sum(1)).mean()


_SORTER_ARGS = """
        sorter (dict | nn.Module, optional): Sorter config, e.g.
            ``dict(type='LSTMSorter', seq_len=100)``, used when
            ``checkpoint`` is None. Defaults to None: the handcrafted
            sorter of length 100 (no training needed).
        checkpoint (str, optional): A file written by
            ``tools/misc/pretrain_sorter.py``; it defines the sorter.
            Defaults to None.
        finetune_sorter (bool): Train the sorter with the model instead of
            freezing it (section 3.2.1). Defaults to False.
        pad_value (float, optional): Pads rows shorter than the sorter's
            ``seq_len``; must be below every score. Defaults to None (rows
            must have exactly ``seq_len`` scores).
        loss_weight (float): Multiplier of the loss, >= 0. Defaults to 1.0."""


class _SorterLoss(SorterRankingBase):
    """A sorter plus a loss weight."""

    def __init__(self,
                 sorter: Union[dict, nn.Module, None] = None,
                 checkpoint: Optional[str] = None,
                 finetune_sorter: bool = False,
                 pad_value: Optional[float] = None,
                 loss_weight: float = 1.0) -> None:
        super().__init__(sorter, checkpoint, finetune_sorter, pad_value)
        self.loss_weight = check_positive(
            type(self).__name__, 'loss_weight', loss_weight, allow_zero=True)


@MODELS.register_module()
class SoDeepSpearmanLoss(_SorterLoss):
    __doc__ = """Spearman loss through a sorter (SoDeep Eq. 4).

    Called as ``loss(pred, target)`` with predicted scores (N, d) and
    ground-truth scores (N, d): each row is a group whose ranking should
    match the target's. Returns ``1 - Spearman`` averaged over the rows,
    with the sorter's ranks of ``pred`` and the exact ranks of ``target``
    (ties share their mean rank); this is Eq. 4 up to the constant
    ``6 / (d (d^2 - 1))``.

    Args:""" + _SORTER_ARGS + """
    """

    def forward(self, pred: Tensor, target: Tensor) -> Tensor:
        """Scalar loss (fp32), see the class docstring."""
        if not isinstance(pred, Tensor) or pred.dim() != 2 or \
                not isinstance(target, Tensor) or target.shape != pred.shape:
            raise ValueError(
                'pred and target must be tensors of the same shape (N, d), '
                f'got {tuple(getattr(pred, "shape", ()))} and '
                f'{tuple(getattr(target, "shape", ()))}')
        if pred.shape[1] < 2:
            raise ValueError(f'rows need d >= 2 scores for a Spearman '
                             f'correlation, got shape {tuple(pred.shape)}')
        if pred.shape[0] == 0:
            return zero_loss(pred)
        return self.loss_weight * sodeep_spearman_loss(self._ranks(pred),
                                                       target)


class _SorterRetrievalLoss(_SorterLoss, EmbeddingLoss):
    """A retrieval loss on the sorter's ranks of each query's row.

    ``_SorterLoss`` comes first in the bases, so the constructor is the
    sorter's (its ``loss_weight`` overrides the base's default) and
    ``forward`` is :class:`~.pairwise.EmbeddingLoss`'s.
    """

    def extra_repr(self) -> str:
        return ', '.join(f'{key}={getattr(self, key)!r}' for key in (
            'finetune_sorter', 'pad_value') + self._repr_keys +
                         ('loss_weight', ))

    def _retrieval_rows(self, embeddings: Tensor, labels: Tensor):
        """Scores, positives and negatives of each query against the other
        B - 1 items (its own column removed), shape (B, B - 1)."""
        pairs = retrieval_pairs(embeddings, labels,
                                owner=type(self).__name__)
        b = embeddings.shape[0]
        if b < 2:  # no other item to rank
            empty = pairs.scores.new_zeros(b, 0)
            return empty, empty.bool(), empty.bool()
        negatives = negatives_of(pairs.positives, pairs.valid)

        def rows(t):
            return t[pairs.valid].view(b, b - 1)

        return rows(pairs.scores), rows(pairs.positives), rows(negatives)


@MODELS.register_module()
class SoDeepAPLoss(_SorterRetrievalLoss):
    __doc__ = """Average-precision surrogate through a sorter (SoDeep Eq. 7).

    Each query's similarities to the other ``B - 1`` items are ranked by
    the sorter (so ``B - 1`` must equal its ``seq_len``, or use
    ``pad_value``); the per-query loss is the mean predicted rank of its
    positives divided by ``B - 1``, minimal when every query ranks its
    positives first; reduced over the queries that have a positive
    (:class:`~.pairwise.EmbeddingLoss`).

    Args:""" + _SORTER_ARGS + """
    """

    def loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        scores, positives, _ = self._retrieval_rows(embeddings, labels)
        if not bool(positives.any()):
            return zero_loss(embeddings)
        return sodeep_ap_loss(self._ranks(scores), positives)


@MODELS.register_module()
class SoDeepRecallLoss(_SorterRetrievalLoss):
    __doc__ = """Rank triplet loss with hard negatives (SoDeep Eq. 9-10).

    Each query's similarities to the other ``B - 1`` items are ranked by
    the sorter (so ``B - 1`` must equal its ``seq_len``, or use
    ``pad_value``). Eq. 9-10 assume one positive per query; here every
    positive ``p`` gets ``[margin + r_p - r_c]_+`` against the query's
    best-ranked negative ``c``, ranks divided by ``B - 1``, averaged over
    the query's positives; reduced over the queries that have a positive
    and a negative (:class:`~.pairwise.EmbeddingLoss`).

    Args:""" + _SORTER_ARGS + """
        margin (float): ``alpha`` in rank positions, >= 0. Defaults to 1.0.
    """
    _repr_keys = ('margin', )

    def __init__(self,
                 sorter: Union[dict, nn.Module, None] = None,
                 checkpoint: Optional[str] = None,
                 finetune_sorter: bool = False,
                 pad_value: Optional[float] = None,
                 margin: float = 1.0,
                 loss_weight: float = 1.0) -> None:
        super().__init__(sorter, checkpoint, finetune_sorter, pad_value,
                         loss_weight)
        self.margin = check_positive(type(self).__name__, 'margin', margin,
                                     allow_zero=True)

    def loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        scores, positives, negatives = self._retrieval_rows(
            embeddings, labels)
        if not bool((positives.any(1) & negatives.any(1)).any()):
            return zero_loss(embeddings)
        return sodeep_recall_loss(self._ranks(scores), positives, negatives,
                                  self.margin)
