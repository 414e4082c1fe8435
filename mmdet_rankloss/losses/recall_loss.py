"""Recall loss by blackbox ranking (RaMBO, Rolinek et al. 2020).

Paper: "Optimizing Rank-based Metrics with Blackbox Differentiation", CVPR
2020, https://arxiv.org/abs/1912.03500, sections 4.3-4.5, 5.1 and Appendix A/B.

Proposition 2 (Eq. 27): ``L_rec = mean over positives i of W(r_i)``, with
``r_i`` the number of negatives ranked above positive ``i`` (Eq. 17) and ``W(k)
= w_1 + ... + w_k``; Eq. 20's weightings are ``W(r) = log(1 + r)`` (``'log'``)
and ``log(1 + log(1 + r))`` (``'loglog'``). The loss is exact and
differentiated by Algorithm 1 on the reduced loss (immune to upstream scaling).
Every query row is ranked at once in fixed-size tensors (rows without a
positive masked, excluded elements ``-inf``), with no read back on a GPU;
docs/losses.md#ranking-core-and-speed."""
from typing import Dict, NamedTuple, Optional, Tuple, Union

import torch
from torch import Tensor

from ..ops.checks import (all_finite, check_choice, check_data, check_flag,
                          check_positive)
from ..ops.ranking import margin_shift, rank_dtype
from ..ops.stable_order import descending_indices, ranks_from_order
from ..optional_mmdet import MODELS
from .memory import ScoreMemory, ScoreMemoryMixin
from .pairwise import EmbeddingLoss, embedding_conditions, retrieval_pairs
from .utils import check_reduction, check_scores_and_masks

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


def _rank_weight_backward(grad: Tensor, r: Tensor, weighting: str) -> Tensor:
    """``grad * W'(r)`` as autograd computes it through
    :func:`recall_rank_weight` (``log1p``'s backward is ``grad / (x + 1)``),
    so that the result is bit for bit autograd's."""
    if weighting == 'loglog':
        grad = grad / (torch.log1p(r) + 1)
    return grad / (r + 1)


class _RecallTerms(NamedTuple):
    """Outputs of :func:`_recall_terms`, all detached, rows of (Q, N)."""
    value: Tensor  # () the reduced loss
    positives: Tensor  # (Q, N) bool, valid positives
    rows: Tensor  # (Q,) bool, queries with a positive
    num_rows: Tensor  # () their number, at least 1 (rank dtype)
    beaten: Tensor  # (Q, N) r_i of Eq. 17 on positives, 0 elsewhere
    grad: Optional[Tensor]  # (Q, N) Algorithm 1's dL/dscores at unit scale


def _ranks(values: Tensor, positions: Tensor, normalize: bool,
           length: Union[int, Tensor]) -> Tuple[Tensor, Tensor]:
    """Ranks (Q, N) of ``values`` (Q, N) along the last dimension (1 = highest,
    ties by index; divided by ``length`` with ``normalize``) and the descending
    order (Q, N) they come from; ``positions`` is ``1..N``."""
    order = descending_indices(values)
    ranks = ranks_from_order(order, positions)
    return (ranks / length if normalize else ranks), order


def _recall_terms(scores: Tensor, positives: Tensor, valid: Tensor,
                  lambda_val: float, margin: float, weighting: str,
                  normalize: bool, reduction: str, need_grad: bool,
                  length: Union[int, Tensor, None] = None) -> _RecallTerms:
    """Loss value and Algorithm 1's score gradient of every row at once, in
    fixed shapes: a row without a valid positive adds 0, is not counted in the
    mean and gets no gradient.

    Args:
        scores (Tensor): (Q, N), finite; detached here.
        positives (Tensor): (Q, N) bool.
        valid (Tensor): (Q, N) bool; False removes an element from its row.
        lambda_val (float): Algorithm 1's interpolation strength, > 0.
        margin (float): Margin of Eq. 14, >= 0.
        weighting (str): ``'log'`` or ``'loglog'``.
        normalize (bool): Rank as fractions ``rank / N``.
        reduction (str): ``'mean'`` or ``'sum'`` over the rows with a positive.
        need_grad (bool): Compute the gradient (the second ranking).
        length (int | Tensor, optional): The row length N of the normalised
            ranks when columns past it are padding. Defaults to the columns.

    Returns:
        _RecallTerms: Value, positives, rows, their number, ``r_i`` and the
        gradient (None unless ``need_grad``), in :func:`rank_dtype`.
    """
    scores = scores.detach()
    work = rank_dtype(scores.dtype)
    n = scores.shape[-1] if length is None else length
    positives = positives & valid
    not_positive = ~positives
    num_pos = positives.sum(-1, dtype=work)  # exact below 2**24
    rows = num_pos > 0
    num_rows = rows.sum(dtype=work).clamp_(min=1)
    num_pos = num_pos.clamp_(min=1)  # rows without positives: 0 / 1
    # Eq. 14-15: rank the margin-shifted scores; an excluded element gets
    # -inf, is always last and so never outruns a positive
    shifted = margin_shift(scores, positives, margin).masked_fill_(
        ~valid, float('-inf'))
    positions = torch.arange(1, scores.shape[-1] + 1, dtype=work,
                             device=scores.device)
    ranks, order = _ranks(shifted, positions, normalize, n)
    # the loss is a function of the (normalised) ranks: de-normalise by
    # the row length, as the derivative below assumes
    int_ranks = ranks * n if normalize else ranks
    # rank among the positives (rk(y+) of Eq. 17): positives at or above
    # each place, counted in integers (exact; a float cumsum has no
    # deterministic CUDA kernel in torch < 2.6)
    pos_above = positives.gather(-1, order).cumsum(-1, dtype=torch.int32)
    rank_in_pos = torch.empty_like(pos_above).scatter_(-1, order, pos_above)
    beaten = (int_ranks - rank_in_pos).masked_fill_(not_positive, 0)
    per_row = recall_rank_weight(beaten, weighting).sum(-1) / num_pos
    value = per_row.sum()
    if reduction == 'mean':
        value = value / num_rows
    if not need_grad:
        return _RecallTerms(value, positives, rows, num_rows, beaten, None)
    # dL/drk, the chain rule of the lines above in autograd's order (so
    # bit for bit what backward through them gives): 'mean' carries 1 / Q
    # (Algorithm 1 acts on the reduced loss, as in the paper and the AP
    # loss), each row 1 / |P|, each positive W'(r_i), times N for the
    # normalised ranks
    row_grad = num_rows.reciprocal() if reduction == 'mean' else \
        num_rows.new_ones(())
    row_grad = (row_grad / num_pos)[:, None]
    grad_ranks = _rank_weight_backward(row_grad, beaten, weighting)
    grad_ranks = grad_ranks.masked_fill_(not_positive, 0)
    if normalize:
        grad_ranks = grad_ranks.mul_(n)
    # Algorithm 1: rank y + lambda * dL/drk again (a full stable re-sort)
    perturbed = torch.add(shifted, grad_ranks, alpha=lambda_val)
    new_ranks = _ranks(perturbed, positions, normalize, n)[0]
    grad = new_ranks.sub_(ranks).div_(lambda_val)
    return _RecallTerms(value, positives, rows, num_rows, beaten, grad)


class _WithGradient(torch.autograd.Function):
    """A value whose score gradient was computed with it (Algorithm 1):
    backward scales that gradient by the incoming one, so a loss weight or
    an AMP scale multiplies the gradient and changes nothing else."""

    @staticmethod
    def forward(ctx, scores, value, grad):
        ctx.save_for_backward(grad)
        ctx.in_dtype = scores.dtype
        return value.clone()

    @staticmethod
    def backward(ctx, grad_value):
        (grad, ) = ctx.saved_tensors
        return (grad * grad_value).to(ctx.in_dtype), None, None


class _RecallResult(NamedTuple):
    loss: Tensor  # scalar, differentiable
    terms: _RecallTerms


def _check_settings(owner: str, lambda_val, margin, weighting, reduction):
    return (check_positive(owner, 'lambda_val', lambda_val),
            check_positive(owner, 'margin', margin, allow_zero=True),
            check_choice(owner, 'weighting', weighting, _WEIGHTINGS),
            check_reduction(owner, reduction))


def _recall_loss(scores: Tensor, positives: Tensor, valid: Tensor,
                 lambda_val: float, margin: float, weighting: str,
                 normalize_ranks: bool, reduction: str,
                 length: Optional[Tensor] = None) -> _RecallResult:
    """Core on validated inputs; see :func:`rambo_recall_loss`."""
    need_grad = torch.is_grad_enabled() and scores.requires_grad
    terms = _recall_terms(scores, positives, valid, lambda_val, margin,
                          weighting, normalize_ranks, reduction, need_grad,
                          length)
    loss = _WithGradient.apply(scores, terms.value, terms.grad) \
        if need_grad else terms.value
    return _RecallResult(loss, terms)


def _recall_diagnostics(terms: _RecallTerms, valid: Tensor,
                        with_grad: bool) -> Dict[str, Tensor]:
    """The logged fractions of :class:`RaMBORecallLoss` (fp32), over the
    queries with a positive, without reading anything back: an undefined
    fraction (no such query, positive or negative) is 0."""
    hits = ((terms.beaten == 0) & terms.positives).any(-1)
    out = dict(rambo_recall_r1=(hits.sum() / terms.num_rows).float())
    if not with_grad:
        return out
    grad = terms.grad
    counted = valid & terms.rows[:, None]
    negatives = counted & ~terms.positives
    # grad is 0 outside the counted elements (their ranks cannot change)
    moved = [grad != 0, (grad < 0) & terms.positives, (grad > 0) & negatives]
    pushed = torch.stack([m.sum() for m in moved])
    among = torch.stack([counted.sum(), terms.positives.sum(),
                         negatives.sum()]).clamp_(min=1)
    density, pos_frac, neg_frac = (pushed / among).unbind()
    out.update(rambo_grad_density=density, rambo_pos_grad_frac=pos_frac,
               rambo_neg_grad_frac=neg_frac)
    return out


def rambo_recall_loss(scores: Tensor,
                      positives: Tensor,
                      valid: Optional[Tensor] = None,
                      lambda_val: float = 0.2,
                      margin: float = 0.02,
                      weighting: str = 'log',
                      normalize_ranks: bool = True,
                      reduction: str = 'mean') -> Tensor:
    """RaMBO recall loss (Eq. 20) of each row of a score matrix.

    A row's loss is ``1/|P| * sum_{i in P} W(r_i)``, ``r_i`` the exact number
    of negatives whose margin-shifted score (Eq. 14) ranks above positive
    ``i``; ties by index. Rows without a positive are left out (a zero that
    keeps the graph when none has one). Columns may be a larger gallery.

    Args:
        scores (Tensor): Finite scores (Q, N), one ranking per row (fp16/bf16
            are ranked in fp32).
        positives (Tensor): Relevance (Q, N), bool or 0/1.
        valid (Tensor, optional): (Q, N) bool; False removes an element from
            its row's ranking (e.g. the query itself). Defaults to all valid.
        lambda_val (float): Algorithm 1's strength, > 0. Defaults to 0.2
            (paper, CUB).
        margin (float): Margin alpha of Eq. 14 in score units. Defaults to 0.02
            (paper, CUB and SOP).
        weighting (str): ``'log'`` or ``'loglog'`` (Eq. 20). Defaults to
            ``'log'``.
        normalize_ranks (bool): Rank as fractions ``rank / N`` (the public
            prototype's scale, in which Table 9's lambdas are taken; same
            value, docs/losses.md). Defaults to True.
        reduction (str): ``'mean'`` or ``'sum'`` over the rows that have a
            positive. Defaults to ``'mean'``.

    Returns:
        Tensor: Scalar loss (fp32, fp64 for fp64 scores).

    Raises:
        ValueError: On bad shapes or dtypes or settings, and on the CPU NaN/inf
            scores or non-binary masks (a device-side assertion elsewhere).

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
                        margin, weighting, normalize_ranks, reduction).loss


@MODELS.register_module()
class RaMBORecallLoss(ScoreMemoryMixin, EmbeddingLoss):
    """RaMBO recall loss for metric learning (section 5.1, Eq. 20).

    The per-query loss of :func:`rambo_recall_loss`, reduced over the queries
    with a positive. The memory (:class:`~.memory.ScoreMemory`, off by default)
    adds the last ``memory`` training batches' detached embeddings as gallery
    columns. Memory, lambda's scale and diagnostics: docs/losses.md.

    Args:
        lambda_val (float): Algorithm 1's interpolation strength. Defaults to
            0.2 (paper, CUB and In-Shop; SOP uses 4).
        margin (float): Margin alpha of Eq. 14, in cosine units. Defaults to
            0.02 (paper, CUB and SOP; In-Shop uses 0.05).
        weighting (str): ``'log'`` or ``'loglog'`` (Eq. 20). Defaults to
            ``'log'``.
        memory (int): Previous training batches kept, >= 0. Defaults to 0.
        normalize_ranks (bool): See :func:`rambo_recall_loss`. Defaults to
            True.
        reduction (str): ``'mean'`` or ``'sum'`` over queries. Defaults to
            ``'mean'``.
        loss_weight (float): Multiplies the loss. Defaults to 1.0.
        log_diagnostics (bool): Return a dict with the loss under
            ``loss_rambo_recall`` and the diagnostics (from the Algorithm-1
            gradient) instead of the scalar loss. Defaults to False.
        memory_shape (tuple[int, int], optional): ``(batch_size, dim)`` the
            memory is allocated for at construction (``torch.compile``).
            Defaults to None (sized by the first training call).
    """

    def __init__(self,
                 lambda_val: float = 0.2,
                 margin: float = 0.02,
                 weighting: str = 'log',
                 memory: int = 0,
                 normalize_ranks: bool = True,
                 reduction: str = 'mean',
                 loss_weight: float = 1.0,
                 log_diagnostics: bool = False,
                 memory_shape: Optional[Tuple[int, int]] = None) -> None:
        super().__init__(loss_weight)
        owner = type(self).__name__
        self.lambda_val, self.margin, self.weighting, self.reduction = \
            _check_settings(owner, lambda_val, margin, weighting, reduction)
        self._memory = ScoreMemory(memory, owner)
        self.memory = self._memory.size
        self._reserve_memory(memory_shape, targets_per_column=False)
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
            ``log_diagnostics``) ``loss_rambo_recall`` and the diagnostics.

        Raises:
            ValueError: On bad shapes or dtypes, and on the CPU NaN/inf or not
                unit-length embeddings (a device-side assertion elsewhere).
        """
        use_memory = self.training and self.memory > 0
        ref, ref_labels = None, None
        if use_memory:
            ref, ref_labels = self._memory.read(embeddings) or (None, None)
        # shapes and dtypes checked there, values here: the scores cover
        # the batch and the memory, in one check that reads nothing back on
        # a device
        pairs = retrieval_pairs(embeddings, labels, ref, ref_labels,
                                check_values=False)
        check_data(type(self).__name__, [
            (all_finite(pairs.scores),
             'embeddings (or the memory) contain NaN or inf'),
            embedding_conditions(embeddings)[1]])
        length = None
        if ref is not None:
            # the memory's padding columns are not ranked, nor counted in N
            stored = ~self._memory.is_padding(ref_labels)
            pairs.valid[:, embeddings.shape[0]:].logical_and_(stored)
            length = stored.sum() + embeddings.shape[0]
        result = _recall_loss(pairs.scores, pairs.positives, pairs.valid,
                              self.lambda_val, self.margin, self.weighting,
                              self.normalize_ranks, self.reduction, length)
        if use_memory and embeddings.shape[0] > 0:
            self._memory.append(embeddings, labels)
        loss = self.loss_weight * result.loss
        if not self.log_diagnostics:
            return loss
        with_grad = result.terms.grad is not None
        return dict(loss_rambo_recall=loss,
                    **_recall_diagnostics(result.terms, pairs.valid,
                                          with_grad))
