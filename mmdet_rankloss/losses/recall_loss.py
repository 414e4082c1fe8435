"""Recall loss by blackbox ranking (RaMBO, Rolinek et al. 2020).

Paper: "Optimizing Rank-based Metrics with Blackbox Differentiation",
CVPR 2020, https://arxiv.org/abs/1912.03500, sections 4.3-4.5, 5.1 and
Appendix A/B.

Recall@K only rewards the best-ranked positive (problem P3 of the paper).
The refined recall of Eq. 16 counts every positive, and summing its loss
over K with weights ``w_K`` gives the closed form of Proposition 2 (Eq. 27):
``L_rec = mean over positives i of W(r_i)``, where ``r_i`` is the number of
negatives ranked above positive ``i`` (Eq. 17) and ``W(k) = w_1 + ... +
w_k``. The two weightings of Eq. 20 are ``W(r) = log(1 + r)`` (``'log'``,
``w_K ~ 1/K``) and ``W(r) = log(1 + log(1 + r))`` (``'loglog'``,
``w_K ~ 1/(K log K)``). The loss is computed exactly from ranks and
differentiated with Algorithm 1 through
:func:`~mmdet_rankloss.ops.ranking.blackbox_rank_loss`, so it is immune to
upstream scaling (``loss_weight``, AMP), like the AP loss.
"""
from typing import Dict, NamedTuple, Optional, Union

import torch
from torch import Tensor

from mmdet.registry import MODELS

from ..ops.checks import check_choice, check_flag, check_positive
from ..ops.ranking import blackbox_rank_loss, margin_shift
from .memory import ScoreMemory, ScoreMemoryMixin
from .pairwise import EmbeddingLoss, retrieval_pairs
from .utils import (check_reduction, check_scores_and_masks, grad_stats,
                    zero_loss)

__all__ = ['recall_rank_weight', 'rambo_recall_loss', 'RaMBORecallLoss']

_WEIGHTINGS = ('log', 'loglog')


def recall_rank_weight(r: Tensor, weighting: str = 'log') -> Tensor:
    """``W(r)`` of Proposition 2 for the two weightings of Eq. 20.

    Args:
        r (Tensor): Numbers of negatives ranked above a positive (>= 0).
        weighting (str): ``'log'``: ``log(1 + r)``; ``'loglog'``:
            ``log(1 + log(1 + r))``. Defaults to ``'log'``.

    Returns:
        Tensor: ``W(r)``, same shape; ``W(0) = 0``.
    """
    check_choice('recall_rank_weight', 'weighting', weighting, _WEIGHTINGS)
    if weighting == 'log':
        return torch.log1p(r)
    return torch.log1p(torch.log1p(r))


class _RecallResult(NamedTuple):
    loss: Tensor  # scalar, differentiable
    rows: Tensor  # (Q,) bool, queries that have a positive
    beaten: Optional[Tensor]  # (Qv, N) detached r_i on positives, else 0
    grad: Optional[Tensor]  # (Qv, N) score gradient at unit scale


def _check_settings(owner: str, lambda_val, margin, weighting, reduction):
    return (check_positive(owner, 'lambda_val', lambda_val),
            check_positive(owner, 'margin', margin, allow_zero=True),
            check_choice(owner, 'weighting', weighting, _WEIGHTINGS),
            check_reduction(owner, reduction))


def _recall_loss(scores: Tensor, positives: Tensor, valid: Tensor,
                 lambda_val: float, margin: float, weighting: str,
                 normalize_ranks: bool, reduction: str,
                 with_grad: bool) -> _RecallResult:
    """Core on validated inputs; see :func:`rambo_recall_loss`."""
    positives = positives.bool() & valid
    num_pos = positives.sum(-1)
    rows = num_pos > 0
    if not bool(rows.any()):
        return _RecallResult(zero_loss(scores), rows, None, None)
    # Eq. 14-15: rank the margin-shifted scores; an excluded element gets
    # -inf, is always last and so never outruns a positive.
    shifted = margin_shift(scores[rows], positives[rows], margin)
    shifted = shifted.masked_fill(~valid[rows], float('-inf'))
    pos = positives[rows]
    pos_f = pos.to(shifted.dtype)
    num_pos = num_pos[rows].to(shifted.dtype)
    beaten_rows = []

    def loss_from_ranks(ranks: Tensor) -> Tensor:
        n = ranks.shape[-1]
        # de-normalise by the row length n (the number of columns), so the
        # counts are exact for any (Q, N), memory included
        int_ranks = ranks * n if normalize_ranks else ranks
        order = int_ranks.detach().round().long() - 1
        # rank within the positives (rk(y+) of Eq. 17): positives at or
        # above each position, a constant of the (integer) ranking, counted
        # in integers (exact; a float cumsum has no deterministic CUDA
        # kernel in torch < 2.6)
        pos_i = pos.to(torch.int32)
        pos_at = torch.zeros_like(pos_i).scatter_(-1, order, pos_i)
        rank_in_pos = pos_at.cumsum(-1, dtype=torch.int32).gather(
            -1, order).to(int_ranks.dtype)
        beaten = torch.where(pos, int_ranks - rank_in_pos,
                             int_ranks.new_zeros(()))
        beaten_rows.append(beaten.detach())
        per_row = (recall_rank_weight(beaten, weighting) * pos_f).sum(-1)
        per_row = per_row / num_pos
        # Algorithm 1 is applied to the reduced loss, as in the paper (and
        # as the AP loss does): with 'mean', dL/drk of a query carries 1/Q.
        return per_row.mean() if reduction == 'mean' else per_row.sum()

    # validate=False: the scores were checked finite (the callers) and the
    # settings by _check_settings; -inf marks the excluded elements
    out = blackbox_rank_loss(shifted, loss_from_ranks, lambda_val,
                             normalize=normalize_ranks, return_grad=with_grad,
                             validate=False)
    loss, grad = out if with_grad else (out, None)
    return _RecallResult(loss, rows, beaten_rows[0], grad)


def rambo_recall_loss(scores: Tensor,
                      positives: Tensor,
                      valid: Optional[Tensor] = None,
                      lambda_val: float = 0.2,
                      margin: float = 0.02,
                      weighting: str = 'log',
                      normalize_ranks: bool = True,
                      reduction: str = 'mean') -> Tensor:
    """RaMBO recall loss (Eq. 20) of each row of a score matrix.

    For a row (a query) with positives ``P`` the loss is
    ``1/|P| * sum_{i in P} W(r_i)`` with ``r_i`` = number of negatives whose
    margin-shifted score (Eq. 14: positives ``- margin/2``, negatives
    ``+ margin/2``) ranks above positive ``i``; ties are ranked by index
    (see :func:`~mmdet_rankloss.ops.ranking.exact_rank`). Rows without a
    positive have no recall and are left out; the result is then the mean
    (or sum) over the rows that have one, and a zero that keeps the graph
    when none has. The matrix need not be square:
    columns may be a larger gallery (e.g. a memory), and ``r_i`` is always
    an exact count of the row's negatives.

    Args:
        scores (Tensor): Scores (Q, N), one ranking per row; any floating
            dtype (fp16/bf16 are shifted and ranked in fp32). Finite.
        positives (Tensor): Relevance (Q, N), bool or 0/1.
        valid (Tensor, optional): (Q, N) bool; False removes an element from
            its row's ranking (e.g. the query itself). Defaults to None
            (all valid).
        lambda_val (float): Algorithm 1's interpolation strength, > 0.
            Defaults to 0.2 (paper, CUB).
        margin (float): Margin alpha of Eq. 14 in score units. Defaults to
            0.02 (paper, CUB and SOP).
        weighting (str): ``'log'`` or ``'loglog'`` (Eq. 20). Defaults to
            ``'log'``.
        normalize_ranks (bool): Rank as fractions ``rank / N`` (N = row
            length), as the public prototype does. The value is unchanged
            (counts are de-normalised by N, not by the number of rows as
            the prototype does), but Algorithm 1 then perturbs N times
            more: ``lambda * N / Q`` on integer ranks with ``'mean'`` (Q =
            queries with a positive). Defaults to True, the prototype's
            scale, in which the paper's Table 9 values are taken.
        reduction (str): ``'mean'`` or ``'sum'`` over the rows that have a
            positive. Defaults to ``'mean'``.

    Returns:
        Tensor: Scalar loss (fp32, fp64 for fp64 scores).

    Raises:
        ValueError: On bad shapes or dtypes, NaN/inf scores, non-binary
            masks, lambda <= 0, margin < 0, or an unknown weighting or
            reduction.

    Example:
        >>> scores = torch.tensor([[0.9, 0.8, 0.7, 0.6]], requires_grad=True)
        >>> positives = torch.tensor([[0, 1, 0, 1]])
        >>> loss = rambo_recall_loss(scores, positives, margin=0.0)
        >>> round(loss.item(), 4)  # (log(1 + 1) + log(1 + 2)) / 2
        0.8959
    """
    if valid is None and isinstance(scores, Tensor):
        valid = torch.ones_like(scores, dtype=torch.bool)
    check_scores_and_masks('rambo_recall_loss', scores,
                           dict(positives=positives, valid=valid), '(Q, N)',
                           allow_empty=True)
    lambda_val, margin, weighting, reduction = _check_settings(
        'rambo_recall_loss', lambda_val, margin, weighting, reduction)
    normalize_ranks = check_flag('rambo_recall_loss', 'normalize_ranks',
                                 normalize_ranks)
    return _recall_loss(scores, positives.bool(), valid.bool(), lambda_val,
                        margin, weighting, normalize_ranks, reduction,
                        False).loss


@MODELS.register_module()
class RaMBORecallLoss(ScoreMemoryMixin, EmbeddingLoss):
    """RaMBO recall loss for metric learning (section 5.1, Eq. 20).

    The per-query loss is the mean over its positives of ``W(r_i)``
    (:func:`rambo_recall_loss`), reduced over the queries with a positive
    (:class:`~.pairwise.EmbeddingLoss`; ``reduction='sum'`` sums instead).

    Memory (section 4.3, Appendix A: 3 batches): the detached embeddings and
    labels of the last ``memory`` training batches of this process
    (:class:`~.memory.ScoreMemory`) are extra gallery columns, used and
    appended to in training mode only. ``r_i`` counts a query's negatives
    among batch and memory exactly; stored items are no queries and get no
    gradient. Under DDP each process keeps its own memory and ranks its
    own batch.

    Scale of lambda: Algorithm 1 acts on the batch loss with ranks divided
    by the gallery length N, as in the public prototype, so a query's
    ranking is perturbed with about ``lambda * (1 + memory)`` on integer
    ranks with a full memory and PK batches; the paper's Table 9 values are
    taken in this scale (``docs/losses.md``).

    Logged diagnostics (keys without ``loss``, so MMEngine only logs them,
    computed from the Algorithm-1 gradient that backward applies, so they
    cost no extra sort): ``rambo_recall_r1``, the fraction of queries whose
    best positive beats every negative by the margin (in-batch R@1 of the
    shifted scores); ``rambo_pos_grad_frac`` / ``rambo_neg_grad_frac``,
    the fraction of (query, positive) / (query, negative) scores pushed up
    / down; ``rambo_grad_density``, the fraction of scores with any
    gradient. A key is left out when it is undefined.

    Args:
        lambda_val (float): Algorithm 1's interpolation strength. Defaults
            to 0.2 (paper, CUB and In-Shop; SOP uses 4).
        margin (float): Margin alpha of Eq. 14, in cosine units. Defaults to
            0.02 (paper, CUB and SOP; In-Shop uses 0.05).
        weighting (str): ``'log'`` or ``'loglog'`` (Eq. 20). Defaults to
            ``'log'``.
        memory (int): Number of previous batches kept, >= 0. Defaults to 3.
        normalize_ranks (bool): See :func:`rambo_recall_loss`. Defaults to
            True.
        reduction (str): ``'mean'`` or ``'sum'`` over queries. Defaults to
            ``'mean'``.
        loss_weight (float): Multiplies the loss. Defaults to 1.0.
        log_diagnostics (bool): Return a dict with the loss under
            ``loss_rambo_recall`` and the diagnostics; False returns the
            scalar loss only. Defaults to True.
    """

    def __init__(self,
                 lambda_val: float = 0.2,
                 margin: float = 0.02,
                 weighting: str = 'log',
                 memory: int = 3,
                 normalize_ranks: bool = True,
                 reduction: str = 'mean',
                 loss_weight: float = 1.0,
                 log_diagnostics: bool = True) -> None:
        super().__init__(loss_weight)
        owner = type(self).__name__
        self.lambda_val, self.margin, self.weighting, self.reduction = \
            _check_settings(owner, lambda_val, margin, weighting, reduction)
        self._memory = ScoreMemory(memory, owner)
        self.memory = self._memory.size
        self.normalize_ranks = check_flag(owner, 'normalize_ranks',
                                          normalize_ranks)
        self.log_diagnostics = check_flag(owner, 'log_diagnostics',
                                          log_diagnostics)

    _repr_keys = ('lambda_val', 'margin', 'weighting', 'memory',
                  'normalize_ranks')

    def forward(self, embeddings: Tensor,
                labels: Tensor) -> Union[Tensor, Dict[str, Tensor]]:
        """Loss of the batch against itself and the memory.

        Args:
            embeddings (Tensor): L2-normalised embeddings (B, D).
            labels (Tensor): Integer class labels (B,).

        Returns:
            Tensor | dict[str, Tensor]: The scalar loss, or (with
            ``log_diagnostics``) ``loss_rambo_recall`` and the diagnostics
            described in the class docstring.
        """
        use_memory = self.training and self.memory > 0
        ref, ref_labels = None, None
        if use_memory:
            ref, ref_labels = self._memory.read(embeddings) or (None, None)
        pairs = retrieval_pairs(embeddings, labels, ref, ref_labels)
        with_grad = self.log_diagnostics and torch.is_grad_enabled() and \
            embeddings.requires_grad
        result = _recall_loss(pairs.scores, pairs.positives, pairs.valid,
                              self.lambda_val, self.margin, self.weighting,
                              self.normalize_ranks, self.reduction, with_grad)
        if use_memory and embeddings.shape[0] > 0:
            self._memory.append(embeddings, labels)
        loss = self.loss_weight * result.loss
        if not self.log_diagnostics:
            return loss
        out = dict(loss_rambo_recall=loss)
        if result.beaten is not None:
            pos = pairs.positives[result.rows]
            best = result.beaten.masked_fill(~pos, float('inf')).amin(-1)
            out['rambo_recall_r1'] = (best == 0).float().mean()
        if result.grad is not None:
            out.update(grad_stats(result.grad, pairs.positives[result.rows],
                                  pairs.valid[result.rows]))
        return out

