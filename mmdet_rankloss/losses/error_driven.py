"""The error-driven update shared by AP Loss, aLRP Loss and Rank & Sort Loss.

All three losses (Chen et al. CVPR 2019; Oksuz et al. NeurIPS 2020 and ICCV
2021) rank every (anchor, class) score of a batch as one sequence and are
written as a sum of *primary terms* ``L_ij`` over pairs, each the error of
a positive ``i`` distributed over the items ``j`` ranked above it that
cause it:

``L = 1/|P| sum_{i in P} sum_j L_ij``,
``dL/ds_i := 1/|P| (sum_j L_ji - sum_j L_ij)``    (the "identity update").

The update is not the derivative of the value; it is what the papers train
with. Their relations compare two scores through the smoothed step

``H(x) = clamp(x / (2 delta) + 1/2, 0, 1)``,   ``x_ij = s_j - s_i``,

used for the value and the update alike (``H(0) = 1/2``: two equal scores
are each half above the other, so ties need no tie-break). With
``N_FP(i) = sum_{j in N} H(x_ij)``, ``rank+(i) = 1 + sum_{k in P, k != i}
H(x_ik)`` and ``rank(i) = rank+(i) + N_FP(i)``:

* ``'ap'``: ``l(i) = N_FP(i) / rank(i)``; ``L_ij = H(x_ij) / rank(i)`` for
  ``j`` a negative (AP Loss, its value is ``1 - AP`` with smoothed ranks).
* ``'rs'``: ranking error ``l_R(i) = N_FP(i) / rank(i)`` distributed over
  the negatives as in ``'ap'``; sorting error ``l_S(i) = (sum_{k in P}
  H(x_ik) (1 - y_k)) / rank+(i)`` (``H(x_ii) = 1``: ``i`` counts itself)
  minus its target ``l*_S(i)``, the same average over the positives above
  ``i`` with ``y_k >= y_i`` only; ``l_S - l*_S`` is distributed over the
  positives above ``i`` with a lower label, ``L_ik = (l_S(i) - l*_S(i))
  H(x_ik) [y_k < y_i] / sum_k' H(x_ik') [y_k' < y_i]``. The value is
  ``1/|P| sum_i (l_R(i) + l_S(i) - l*_S(i))``.
* ``'alrp'``: ``l(i) = (N_FP(i) + E_loc(i)) / rank(i)`` with ``E_loc(i) =
  e_i + sum_{k in P, k != i} H(x_ik) e_k`` (``e`` the positives'
  localisation errors in [0, 1]); ``L_ij = l(i) H(x_ij) / N_FP(i)`` for
  ``j`` a negative. The value returned is the classification component
  ``1/|P| sum_i N_FP(i) / rank(i)``; the localisation component ``1/|P|
  sum_i E_loc(i) / rank(i) = sum_k v_k e_k`` is returned as the weights
  ``v`` (ranks fixed), for the caller to apply to differentiable errors.

In every mode the update of a positive is ``-1/|P|`` times the error it
distributes plus (``'rs'`` only) what the positives below it distribute to
it, and each negative gets ``1/|P| sum_i L_ij``: the updates sum to zero
(the papers' balance property).

Cost. ``P`` (positives) is small, ``n`` (all scores) large. The ``P x P``
relations are explicit. The negatives are never paired with the positives:
only the negatives above ``min(s_P) - delta`` matter; they are sorted once
(:func:`~mmdet_rankloss.ops.stable_order.descending_order`) and

* ``N_FP(i)`` is the count of negatives above ``s_i + delta`` plus the
  linear part over the window ``[s_i - delta, s_i + delta]``, from two
  binary searches of ``s_i +- delta`` and prefix sums of the sorted scores;
* the update of a negative, ``1/|P| sum_i w_i H(s_j - s_i)``, is piecewise
  linear in ``s_j`` with breakpoints ``s_i +- delta``: along the sorted
  negatives it is ``F_p + a_p s_p + b_p``, where ``F``, ``a`` and ``b`` are
  cumulative sums of ``P`` increments placed at the same binary-search
  positions.

So a call costs one sort of the relevant negatives plus O(n) passes and
O(P^2 + P log n); measured in ``docs/rank_sort.md``.
"""
from typing import Dict, NamedTuple, Optional

import torch
from torch import Tensor, nn

from ..ops.checks import check_choice, check_number, check_positive
from ..ops.stable_order import descending_order
from .score_space import ClsHooksMixin, ScoreSpace
from .utils import check_reduction, zero_loss

__all__ = ['MODES', 'ErrorDrivenTerms', 'smoothed_step', 'error_driven_terms',
           'error_driven_loss', 'ErrorDrivenLossFunction',
           'ErrorDrivenDetectionLoss']

MODES = ('ap', 'rs', 'alrp')


def smoothed_step(x: Tensor, delta: float) -> Tensor:
    """``H(x)``: 0 below ``-delta``, 1 above ``delta``, linear between."""
    return (x / (2 * delta) + 0.5).clamp(0, 1)


class ErrorDrivenTerms(NamedTuple):
    """What :func:`error_driven_terms` returns (float64 unless noted).

    Attributes:
        loss (Tensor): The value (scalar): ``1 - AP`` ('ap'), ``L_RS``
            ('rs') or the classification component of aLRP ('alrp').
        ranking (Tensor): ``1/|P| sum_i N_FP(i) / rank(i)`` (scalar).
        sorting (Tensor): 'rs': ``1/|P| sum_i (l_S(i) - l*_S(i))``; else 0.
        loc (Tensor): 'alrp': the localisation component with the given
            errors; else 0.
        grad (Tensor, optional): The update dL/ds (n,) in the scores'
            dtype at unit upstream scale; None without ``with_grad``.
        loc_weight (Tensor): 'alrp': ``v`` (P,), ``d loc / d e`` with the
            ranks fixed; else empty.
        num_pos (int): ``|P|``.
    """
    loss: Tensor
    ranking: Tensor
    sorting: Tensor
    loc: Tensor
    grad: Optional[Tensor]
    loc_weight: Tensor
    num_pos: int


def _negatives_above(scores: Tensor, negatives: Tensor, threshold: float):
    """Indices of the negatives that can be within ``delta`` of a positive.

    ``threshold`` is ``min(s_P) - delta`` lowered by a few ulps: the
    comparison runs in the scores' dtype, and a negative kept needlessly
    gets ``H = 0`` anyway."""
    slack = 1e-6 * (1.0 + abs(threshold))
    return (negatives & (scores > threshold - slack)).nonzero().squeeze(1)


def error_driven_terms(scores: Tensor,
                       positives: Tensor,
                       delta: float,
                       mode: str = 'rs',
                       negatives: Optional[Tensor] = None,
                       quality: Optional[Tensor] = None,
                       loc_error: Optional[Tensor] = None,
                       with_grad: bool = True) -> ErrorDrivenTerms:
    """Value and error-driven update of one ranking (see the module doc).

    Args:
        scores (Tensor): Scores (n,), float, no NaN (not checked here).
        positives (Tensor): Bool (n,).
        delta (float): Half-width of the smoothed step, > 0.
        mode (str): One of :data:`MODES`.
        negatives (Tensor, optional): Bool (n,), disjoint from
            ``positives``; scores in neither take no part and get no
            update. Defaults to ``~positives``.
        quality (Tensor, optional): 'rs': labels ``y`` (P,) of the
            positives in index order, in [0, 1]. Defaults to ones (then the
            sorting error is 0 and 'rs' is 'ap').
        loc_error (Tensor, optional): 'alrp': localisation errors ``e``
            (P,) in [0, 1], positives in index order. Defaults to zeros.
        with_grad (bool): Compute the update. Defaults to True.

    Returns:
        ErrorDrivenTerms: see there.
    """
    check_positive('error_driven_terms', 'delta', delta)
    check_choice('error_driven_terms', 'mode', mode, MODES)
    f64 = dict(dtype=torch.float64, device=scores.device)
    zero = torch.zeros((), **f64)
    n = scores.shape[0]
    scores = scores.detach()
    if negatives is None:
        negatives = ~positives
    pos_idx = positives.nonzero().squeeze(1)
    num_pos = pos_idx.numel()
    grad = scores.new_zeros(n) if with_grad else None
    if num_pos == 0:
        return ErrorDrivenTerms(zero, zero, zero, zero, grad,
                                scores.new_zeros(0, dtype=torch.float64), 0)
    u = scores[pos_idx].to(torch.float64)  # (P,)
    two_delta = 2.0 * delta

    # ---- negatives: sorted once, N_FP(i) by binary search + prefix sums
    neg_idx = _negatives_above(scores, negatives, float(u.min()) - delta)
    neg_sorted, order = descending_order(scores[neg_idx])
    neg_sorted = neg_sorted.to(torch.float64)  # -s, ascending
    prefix = torch.zeros(neg_sorted.numel() + 1, **f64)
    torch.cumsum(-neg_sorted, 0, out=prefix[1:])  # sums of s, descending
    # hi(i) = #(s > u_i + delta), lo(i) = #(s >= u_i - delta)
    hi = torch.searchsorted(neg_sorted, -(u + delta), side='left')
    lo = torch.searchsorted(neg_sorted, -(u - delta), side='right')
    width = (lo - hi).to(torch.float64)
    nfp = hi.to(torch.float64) + (
        (prefix[lo] - prefix[hi]) - width * u) / two_delta + 0.5 * width
    nfp = torch.where(lo > 0, nfp.clamp(min=0), torch.zeros_like(nfp))

    # ---- positives: explicit P x P relations, H_pp[i, k] = H(s_k - s_i)
    h_pp = smoothed_step(u[None, :] - u[:, None], delta)
    h_pp.fill_diagonal_(0)
    rank_plus = 1 + h_pp.sum(1)
    rank = rank_plus + nfp
    ranking_err = nfp / rank
    sorting, loc, loc_weight = zero, zero, u.new_zeros(0)
    pos_update = -ranking_err  # -sum_j L_ij over the negatives, per i
    to_negatives = 1 / rank  # w_i: L_ij = w_i H(x_ij) for j negative
    if mode == 'rs':
        y = torch.ones_like(u) if quality is None else \
            quality.detach().to(torch.float64)
        err = 1 - y
        above = h_pp @ err
        current = (err + above) / rank_plus
        higher = h_pp * (y[None, :] >= y[:, None])
        target = (err + higher @ err) / (1 + higher.sum(1))
        sort_err = (current - target).clamp(min=0)
        lower = h_pp * (y[None, :] < y[:, None])
        share = lower.sum(1)
        l_pp = lower * torch.where(share > 0, sort_err / share,
                                   torch.zeros_like(share))[:, None]
        sort_out = l_pp.sum(1)  # sort_err where it has somewhere to go
        sorting = sort_err.sum() / num_pos
        pos_update = pos_update - sort_out + l_pp.sum(0)
    elif mode == 'alrp':
        e = torch.zeros_like(u) if loc_error is None else \
            loc_error.detach().to(torch.float64)
        e_loc = e + h_pp @ e
        loc = (e_loc / rank).sum() / num_pos
        loc_weight = (1 / rank + h_pp.t() @ (1 / rank)) / num_pos
        ell = (nfp + e_loc) / rank
        has_fp = nfp > 0
        pos_update = -torch.where(has_fp, ell, torch.zeros_like(ell))
        to_negatives = torch.where(has_fp, ell / nfp.clamp(min=1e-300),
                                   torch.zeros_like(ell))
    ranking = ranking_err.sum() / num_pos
    loss = ranking + sorting

    if with_grad:
        grad[pos_idx] = (pos_update / num_pos).to(grad.dtype)
        m = neg_sorted.numel()
        if m:
            # the update of the p-th negative (descending) is
            # sum_i w_i H(s_p - s_i) / |P| = full_p + slope_p s_p + icpt_p
            w = to_negatives / num_pos
            full = torch.zeros(m + 1, **f64)
            full[0] = w.sum()
            full.index_add_(0, hi, -w)
            slope = torch.zeros(m + 1, **f64)
            slope.index_add_(0, hi, w / two_delta)
            slope.index_add_(0, lo, -w / two_delta)
            icpt = torch.zeros(m + 1, **f64)
            icpt.index_add_(0, hi, w * (0.5 - u / two_delta))
            icpt.index_add_(0, lo, -w * (0.5 - u / two_delta))
            upd = full.cumsum_(0)[:m]
            upd += slope.cumsum_(0)[:m] * -neg_sorted
            upd += icpt.cumsum_(0)[:m]
            grad[neg_idx[order]] = upd.to(grad.dtype)
    return ErrorDrivenTerms(loss, ranking, sorting, loc, grad, loc_weight,
                            num_pos)


class ErrorDrivenLossFunction(torch.autograd.Function):
    """Forward: the value of :func:`error_driven_terms`; backward: its
    error-driven update times ``grad_output`` (nothing for the masks and
    the labels: the update is not a derivative of them).

    Outputs ``(loss, parts, loc_weight)``: ``parts = (ranking, sorting,
    loc)`` and ``loc_weight`` are not differentiable.
    """

    @staticmethod
    def forward(ctx, scores: Tensor, positives: Tensor,
                negatives: Optional[Tensor], delta: float, mode: str,
                quality: Optional[Tensor], loc_error: Optional[Tensor]):
        terms = error_driven_terms(scores, positives, delta, mode, negatives,
                                   quality, loc_error,
                                   with_grad=ctx.needs_input_grad[0])
        ctx.save_for_backward(terms.grad)
        parts = torch.stack([terms.ranking, terms.sorting, terms.loc])
        out_dtype = torch.float64 if scores.dtype == torch.float64 \
            else torch.float32
        parts = parts.to(out_dtype)
        loc_weight = terms.loc_weight.to(out_dtype)
        ctx.mark_non_differentiable(parts, loc_weight)
        return terms.loss.to(out_dtype), parts, loc_weight

    @staticmethod
    def backward(ctx, grad_loss, grad_parts, grad_loc_weight):
        grad, = ctx.saved_tensors
        if grad is None:
            return (None, ) * 7
        return (grad * grad_loss.to(grad.dtype), ) + (None, ) * 6


def error_driven_loss(scores: Tensor, positives: Tensor, delta: float,
                      mode: str = 'rs', negatives: Optional[Tensor] = None,
                      quality: Optional[Tensor] = None,
                      loc_error: Optional[Tensor] = None):
    """:class:`ErrorDrivenLossFunction` applied: ``(loss, parts,
    loc_weight)`` with the error-driven update as the loss's backward.

    Args: as :func:`error_driven_terms`; ``scores`` may require grad.
    """
    return ErrorDrivenLossFunction.apply(scores, positives, negatives, delta,
                                         mode, quality, loc_error)


class ErrorDrivenDetectionLoss(ClsHooksMixin, nn.Module):
    """Shared body of the registered error-driven detection losses.

    A head's ``(cls_score (N, channels), labels (N,) in 0..C, weight (N,))``
    become one ranking of the N x C scores of the score space (the
    'logits' space: the first C logits of a C + 1 channel output, ranked as
    they are, so that ``delta`` is in logit units as in the papers): the
    score of anchor ``a`` for its label is a positive, every other score of
    a row with weight > 0 a negative; rows with weight 0 take no part.
    Per-anchor extras (``quality``, ``loc_error``) are read at the rows of
    the positives. Subclasses set :attr:`mode`, :attr:`default_delta` and
    :attr:`per_anchor_input` and build the output dict (``_outputs``).

    Args:
        delta (float, optional): Half-width of the smoothed step, > 0.
            Defaults to None: :attr:`default_delta`.
        score_space (str): See :class:`~.score_space.ScoreSpace`.
        loss_weight (float): Multiplies value and update, >= 0.
    """
    mode = 'ap'
    #: ``delta`` when the config gives none (the paper's)
    default_delta = 1.0
    #: The per-anchor input :meth:`forward` takes by keyword, if any
    #: (``'quality'``, ``'loc_error'``)
    per_anchor_input: Optional[str] = None

    def __init__(self, delta: Optional[float] = None,
                 score_space: str = 'logits',
                 loss_weight: float = 1.0) -> None:
        super().__init__()
        owner = type(self).__name__
        self.delta = check_positive(
            owner, 'delta', self.default_delta if delta is None else delta)
        self.space = ScoreSpace(score_space, None, owner)
        self.loss_weight = check_number(owner, 'loss_weight', loss_weight,
                                        low=0)

    @property
    def score_space(self) -> str:
        return self.space.name

    @property
    def calibration(self):
        return None

    @property
    def cls_hooks(self) -> ScoreSpace:
        return self.space

    def extra_repr(self) -> str:
        return (f'delta={self.delta}, score_space={self.score_space!r}, '
                f'loss_weight={self.loss_weight}')

    def _per_positive(self, name: str, values: Optional[Tensor], n: int,
                      rows: Tensor, high: Optional[float]
                      ) -> Optional[Tensor]:
        """``values`` (N,) checked and read at the positive ``rows``."""
        if values is None:
            return None
        owner = type(self).__name__
        if not isinstance(values, Tensor) or values.shape != (n, ) or \
                not values.is_floating_point():
            raise ValueError(
                f'{owner}: {name} must be a float tensor of shape ({n},), '
                f'got {getattr(values, "shape", values)}')
        picked = values[rows]
        if picked.numel():
            bad = ~torch.isfinite(picked) | (picked < 0)
            if high is not None:
                bad |= picked > high
            if bool(bad.any()):
                bound = f'[0, {high:g}]' if high is not None else '[0, inf)'
                raise ValueError(f'{owner}: {name} must be finite and in '
                                 f'{bound} at the positives')
        return picked

    def forward(self, cls_score: Tensor, labels: Tensor,
                weight: Optional[Tensor] = None,
                avg_factor: Optional[float] = None,
                reduction_override: Optional[str] = None,
                **per_anchor: Optional[Tensor]) -> Dict[str, Tensor]:
        """The loss of one batch.

        Args:
            cls_score (Tensor): (N, C + 1) for 'logits' (background column
                unused), (N, C) for 'sigmoid'.
            labels (Tensor): (N,) in 0..C, C = background.
            weight (Tensor, optional): (N,); rows with weight 0 are left
                out, other values do not matter.
            avg_factor (float, optional): Ignored (the loss is normalised
                by the number of positives).
            reduction_override (str, optional): 'mean' or 'sum' (equal: one
                ranking); 'none' raises.
            **per_anchor (Tensor): :attr:`per_anchor_input` by keyword, if
                the loss has one: (N,) values read at the positive rows.

        Returns:
            dict[str, Tensor]: The subclass's losses and logged values.
        """
        unknown = set(per_anchor) - {self.per_anchor_input}
        if unknown:
            raise TypeError(f'{type(self).__name__}.forward() got unexpected '
                            f'keyword arguments {sorted(unknown)}')
        return self._outputs(*self._rank(cls_score, labels, weight,
                                         reduction_override, **per_anchor))

    def _outputs(self, loss: Tensor, parts: Tensor, loc_weight: Tensor,
                 loc_error: Optional[Tensor],
                 zero: Tensor) -> Dict[str, Tensor]:
        """The output dict from what :meth:`_rank` returns."""
        raise NotImplementedError(
            f'{type(self).__name__} subclasses ErrorDrivenDetectionLoss but '
            'does not define _outputs(), which names its returned losses')

    def _rank(self, cls_score: Tensor, labels: Tensor,
              weight: Optional[Tensor], reduction_override: Optional[str],
              quality: Optional[Tensor] = None,
              loc_error: Optional[Tensor] = None):
        """(loss, parts, loc_weight, positive rows, zero) of the batch."""
        owner = type(self).__name__
        if reduction_override is not None:
            # one ranking of the whole batch: 'mean' and 'sum' agree
            check_reduction(owner, reduction_override, 'reduction_override')
        num_classes = self.space.check_inputs(cls_score, labels, weight)
        n = cls_score.shape[0]
        scores = self.space.ranked(cls_score, num_classes)
        valid = torch.ones(n, dtype=torch.bool, device=cls_score.device) \
            if weight is None else weight > 0
        rows = ((labels < num_classes) & valid).nonzero().squeeze(1)
        positives = torch.zeros_like(scores, dtype=torch.bool)
        positives[rows, labels[rows]] = True
        negatives = ~positives
        if weight is not None:
            negatives &= valid[:, None]
        quality = self._per_positive('quality', quality, n, rows, 1.0)
        loc_error = self._per_positive('loc_error', loc_error, n, rows, 1.0)
        loss, parts, loc_weight = error_driven_loss(
            scores.reshape(-1), positives.reshape(-1), self.delta,
            self.mode, negatives.reshape(-1), quality,
            None if loc_error is None else loc_error.detach())
        return loss, parts, loc_weight, loc_error, zero_loss(cls_score)
