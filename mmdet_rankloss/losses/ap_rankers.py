"""Ranking back-ends of the AP loss: blackbox, sigmoid soft ranks, a sorter.

Ranks are piecewise constant, so each back-end supplies another surrogate
gradient of ``1 - AP`` (Eq. 21-22 of RaMBO): :class:`BlackboxRanker` (default,
Algorithm 1), :class:`SigmoidRanker` (SRT Eq. 4) and :class:`SorterRanker` (a
SoDeep sorter). All take the margin-shifted scores (Eq. 14), log the same exact
AP and reduce over the rows with a positive; ``ranker`` of
:class:`~mmdet_rankloss.losses.RaMBOAPLoss` switches them
(docs/detection.md#ranking-back-ends)."""
from typing import Optional, Tuple, Union

import torch
import torch.nn as nn
from torch import Tensor

from ..networks.sorter_ranking import SorterRankingBase, sorter_ranks
from ..ops.checks import check_flag, check_positive
from ..ops.ranking import subset_rank_at
from ..ops.soft_rank import soft_rank_of
from ..optional_mmdet import MODELS
from .average_precision import (APLossResult, ap_of_rows, blackbox_ap_classes,
                                blackbox_ap_of_rows, exact_ap, reduce_rows,
                                row_mean)

__all__ = [
    'APLossResult', 'APRanker', 'BlackboxRanker', 'SigmoidRanker',
    'SorterRanker'
]

#: What :meth:`APRanker.rank_classes` returns: the per-class (``L_mAP``)
#: and the across-classes (``L_APC``) results, None where nothing is ranked.
ClassRankings = Tuple[Optional[APLossResult], Optional[APLossResult]]


class APRanker(nn.Module):
    """The interface of the AP back-ends.

    ``forward`` is ``1 - AP`` of rows of scores (shared entry point
    :func:`~.average_precision.ap_of_rows`: checks for positives and shifts
    by the margin; subclasses give ``_rows``). :meth:`rank_classes` is what
    :class:`~mmdet_rankloss.losses.RaMBOAPLoss` calls: both of its rankings
    of a batch.
    """

    knows_grad = False
    #: Whether :meth:`rank_classes` takes items that are not ranked as
    #: ``-inf`` rows (fixed shapes); otherwise they must be left out.
    masks_items = False

    def __init__(self, positive_rank_grad: bool = False) -> None:
        super().__init__()
        self.positive_rank_grad = check_flag(
            type(self).__name__, 'positive_rank_grad', positive_rank_grad)

    def forward(self,
                scores: Tensor,
                positives: Tensor,
                margin: float,
                reduction: str = 'mean',
                with_grad: bool = False) -> APLossResult:
        """``1 - AP`` of each row, reduced over the rows with a positive.

        Args:
            scores (Tensor): Validated scores (..., n), finite; each row
                (along the last dimension) is one ranking.
            positives (Tensor): Bool, the scores' shape.
            margin (float): Margin alpha of Eq. 14, >= 0.
            reduction (str): ``'mean'`` or ``'sum'`` over valid rows.
            with_grad (bool): Also return the score gradient at unit scale
                when the back-end knows it in forward (blackbox only).

        Returns:
            APLossResult: Loss, detached exact AP per row, valid rows and
            the gradient (or None).
        """
        return ap_of_rows(scores, positives, margin, reduction, with_grad,
                          self._rows, self.knows_grad)

    def rank_classes(self,
                     scores: Tensor,
                     positives: Tensor,
                     stored: Optional[Tuple[Tensor, Tensor]],
                     margin: float,
                     reduction: str,
                     with_grad: bool = False,
                     masked: bool = False) -> ClassRankings:
        """``1 - AP`` of each class over the batch and the stored batches,
        and of all the batch's (item, class) scores as one row.

        Args:
            scores (Tensor): Validated, finite scores (N, C).
            positives (Tensor): Bool (N, C).
            stored (tuple[Tensor, Tensor], optional): Earlier batches'
                scores (M, C) and positives (M, C), ranked with each class
                but given no gradient; None for none.
            margin (float): Margin alpha of Eq. 14, >= 0.
            reduction (str): ``'mean'`` or ``'sum'`` over the classes with
                a positive.
            with_grad (bool): As in :meth:`forward`.
            masked (bool): Whether items that are not ranked are ``-inf``
                rows; only a ranker with ``masks_items`` takes them (the
                others are given the ranked items alone).

        Returns:
            tuple: The classes' result (C rows), None when there is no
            score at all; the flat row's (1 row), None for an empty batch.
        """
        if masked and not self.masks_items:
            raise ValueError(f'{type(self).__name__} ranks every item it '
                             'is given: leave the items out, not -inf')
        rows, row_positives = scores.t(), positives.t()
        if stored is not None:
            rows = torch.cat([scores, stored[0]]).t()
            row_positives = torch.cat([positives, stored[1]]).t()
        per_class = self(rows, row_positives, margin, reduction,
                         with_grad) if rows.shape[1] else None
        across = self(scores.reshape(1, -1), positives.reshape(1, -1),
                      margin, 'mean', with_grad) if scores.shape[0] else None
        return per_class, across


@MODELS.register_module()
class BlackboxRanker(APRanker):
    """Exact ranks, differentiated by RaMBO's Algorithm 1 (the default).

    :func:`~.average_precision.blackbox_ap`: the gradient is computed in
    forward at unit upstream scale, so the loss is immune to upstream
    scaling and the gradient is known there (``with_grad``, used for the
    logged diagnostics); a fixed number of tensor operations and no read
    from the device.

    Args:
        lambda_val (float): Algorithm 1's interpolation strength, > 0.
            Defaults to 0.5.
        normalize_ranks (bool): Rank as ``rank / n`` (acts as ``lambda * n``
            on integer ranks). Defaults to True.
        positive_rank_grad (bool): Also differentiate the rank among the
            positives by Algorithm 1 (a second, stacked ranking); otherwise
            it is read off the one ranking and held constant. Defaults to
            False.
    """
    knows_grad = True
    masks_items = True

    def __init__(self,
                 lambda_val: float = 0.5,
                 normalize_ranks: bool = True,
                 positive_rank_grad: bool = False) -> None:
        super().__init__(positive_rank_grad)
        owner = type(self).__name__
        self.lambda_val = check_positive(owner, 'lambda_val', lambda_val)
        self.normalize_ranks = check_flag(owner, 'normalize_ranks',
                                          normalize_ranks)

    def extra_repr(self) -> str:
        return (f'lambda_val={self.lambda_val}, normalize_ranks='
                f'{self.normalize_ranks}, positive_rank_grad='
                f'{self.positive_rank_grad}')

    def forward(self,
                scores: Tensor,
                positives: Tensor,
                margin: float,
                reduction: str = 'mean',
                with_grad: bool = False) -> APLossResult:
        """``1 - AP`` of each row by :func:`~.average_precision.
        blackbox_ap` (see :meth:`APRanker.forward`); no read from the
        device."""
        return blackbox_ap_of_rows(scores, positives, margin,
                                   self.lambda_val, self.normalize_ranks,
                                   reduction, self.positive_rank_grad,
                                   with_grad)

    def rank_classes(self,
                     scores: Tensor,
                     positives: Tensor,
                     stored: Optional[Tuple[Tensor, Tensor]],
                     margin: float,
                     reduction: str,
                     with_grad: bool = False,
                     masked: bool = False) -> ClassRankings:
        """Both rankings of :meth:`APRanker.rank_classes` by
        :func:`~.average_precision.blackbox_ap_classes`: items that are not
        ranked may be ``-inf`` rows (``masked``), and both results are
        given whatever the data (a batch without positives has loss 0)."""
        return blackbox_ap_classes(scores, positives, stored, margin,
                                   reduction, with_grad, self.lambda_val,
                                   self.normalize_ranks,
                                   self.positive_rank_grad, masked)


@MODELS.register_module()
class SigmoidRanker(APRanker):
    """Sigmoid soft ranks of the positives (SRT Eq. 4, SoDeep Eq. 11-12).

    A positive's rank becomes ``0.5 + sum_k sigmoid((s_k - s_i) / t)`` and the
    loss ``1 - mean_i rank_pos_i / rank_all_i``: ``P * n`` pairs a row, a
    gradient for every score. The rank among the positives is detached unless
    ``positive_rank_grad`` (see :func:`~mmdet_rankloss.losses.rambo_ap_loss`);
    the soft AP tends to the exact one as ``t -> 0``.

    Args:
        temperature (float): ``t`` in the units of the ranked scores (logits by
            default), > 0. Defaults to 1.0 (SRT's Eq. 4 has none).
        positive_rank_grad (bool): Differentiate the soft rank among positives
            too. Defaults to False.
    """

    def __init__(self,
                 temperature: float = 1.0,
                 positive_rank_grad: bool = False) -> None:
        super().__init__(positive_rank_grad)
        self.temperature = check_positive(type(self).__name__, 'temperature',
                                          temperature)

    def extra_repr(self) -> str:
        return (f'temperature={self.temperature}, positive_rank_grad='
                f'{self.positive_rank_grad}')

    def _rows(self, shifted, positives, at_positives, num_pos, valid,
              reduction, with_grad) -> APLossResult:
        row_of, col_of = at_positives
        rank_all, rank_pos = soft_rank_of(
            shifted[row_of, col_of], shifted[row_of], self.temperature,
            within=positives[row_of])
        if not self.positive_rank_grad:
            rank_pos = rank_pos.detach()
        ap = row_mean(rank_pos / rank_all, row_of, col_of,
                      shifted.shape[-1], num_pos)
        return APLossResult(
            reduce_rows(ap, valid, reduction),
            exact_ap(shifted, row_of, col_of, num_pos),
            valid, None)


@MODELS.register_module()
class SorterRanker(SorterRankingBase, APRanker):
    """Ranks predicted by a SoDeep sorter network, in chunks of its length.

    A sorter ranks sequences of exactly ``seq_len = d`` scores: each row,
    standardised with its detached mean and std (floored at ``min_std``; the
    sorter learnt unit spread), is cut after a random permutation into ``ceil(n
    / d)`` chunks (the last completed from the permutation's start, a short row
    padded below its scores), and the loss is the mean ``1 - AP`` over the
    chunks with a positive. Precision is ``exact rank among positives /
    predicted rank``, the latter clamped below at the former (never above 1).
    The logged AP is the whole row's exact AP.

    Args:
        sorter (dict | nn.Module, optional): Sorter config, used when
            ``checkpoint`` is None. Defaults to None: the handcrafted sorter of
            length 100.
        checkpoint (str, optional): A sorter file written by
            ``tools/misc/pretrain_sorter.py``. Defaults to None.
        finetune_sorter (bool): Train the sorter with the detector. Defaults to
            False (frozen, the paper's setting).
        min_std (float): Floor of the standard deviation used to standardise a
            row, > 0. Defaults to 1e-3.
    """

    def __init__(self,
                 sorter: Union[dict, nn.Module, None] = None,
                 checkpoint: Optional[str] = None,
                 finetune_sorter: bool = False,
                 min_std: float = 1e-3) -> None:
        super().__init__(sorter, checkpoint, finetune_sorter)
        self.min_std = check_positive(type(self).__name__, 'min_std',
                                      min_std)

    def _chunks(self, shifted: Tensor, positives: Tensor):
        """Random chunks (R * m, min(n, d)) of each row, and their row."""
        num_rows, n = shifted.shape
        d = self.sorter.seq_len
        num_chunks = -(-n // d)
        order = torch.rand(num_rows, n, device=shifted.device).argsort(-1)
        if n > d:
            order = torch.cat([order, order[:, :num_chunks * d - n]], -1)
        order = order.view(num_rows * num_chunks, min(n, d))
        chunk_row = torch.arange(
            num_rows, device=shifted.device).repeat_interleave(num_chunks)
        return (shifted[chunk_row[:, None], order],
                positives[chunk_row[:, None], order], chunk_row)

    def _rows(self, shifted, positives, at_positives, num_pos, valid,
              reduction, with_grad) -> APLossResult:
        mean = shifted.detach().mean(-1, keepdim=True)
        std = shifted.detach().std(-1, keepdim=True) if shifted.shape[-1] > 1 \
            else torch.ones_like(mean)
        standard = (shifted - mean) / std.clamp(min=self.min_std)
        chunks, chunk_pos, chunk_row = self._chunks(standard, positives)
        per_row = chunks.shape[0] // shifted.shape[0]
        keep = chunk_pos.any(-1)
        kept_per_row = keep.view(-1, per_row).sum(1)
        chunk_col = torch.arange(
            keep.numel(), device=keep.device)[keep] % per_row
        chunks, chunk_pos, chunk_row = chunks[keep], chunk_pos[keep], \
            chunk_row[keep]
        pad = float(chunks.detach().min()) - 1.0
        predicted = sorter_ranks(self.sorter, chunks, pad)
        pos_chunk, pos_col = chunk_pos.nonzero(as_tuple=True)
        rank_pos = subset_rank_at(chunks, pos_chunk, pos_col)
        precision = rank_pos / torch.maximum(predicted[pos_chunk, pos_col],
                                             rank_pos)
        chunk_ap = row_mean(precision, pos_chunk, pos_col, chunks.shape[1],
                            chunk_pos.sum(-1))
        # mean of the chunk APs of each row (every row with a positive has
        # at least one chunk with a positive)
        ap = row_mean(chunk_ap, chunk_row, chunk_col, per_row, kept_per_row)
        row_of, col_of = at_positives
        return APLossResult(
            reduce_rows(ap, valid, reduction),
            exact_ap(shifted, row_of, col_of, num_pos), valid, None)
