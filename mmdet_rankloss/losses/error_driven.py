"""The error-driven update shared by AP Loss, aLRP Loss and Rank & Sort Loss.

All three (Chen et al. CVPR 2019; Oksuz et al. NeurIPS 2020 and ICCV 2021) rank
every (anchor, class) score of a batch as one sequence and are sums of primary
terms ``L_ij``, the error of a positive ``i`` distributed over the items ``j``
that cause it: ``L = 1/|P| sum_{i in P} sum_j L_ij`` and the identity update
``dL/ds_i := 1/|P| (sum_j L_ji - sum_j L_ij)`` (not the derivative of the
value). ``H(x) = clamp(x / (2 delta) + 1/2, 0, 1)``, ``x_ij = s_j - s_i``,
``N_FP(i) = sum_{j in N} H(x_ij)``.

Each mode's errors (``'ap'``, ``'rs'``, ``'alrp'``) are in
:mod:`.error_driven_modes`; the formulas, the authors' gates and each option's
measured effect: docs/losses.md#rank--sort-alrp-and-ap-loss. The updates sum to
zero. The negatives' side is :class:`~.error_driven_negatives.SortedNegatives`
(one sort); the ``P x P`` relations are explicit; every sum is deterministic on
CUDA. On a device the core runs a fixed number of kernels and reads back once
(the positives' ``nonzero``, none when the caller gives them). ``precision``
(:data:`PRECISIONS`) is the dtype of the arithmetic (float64 by default;
docs/reliability.md); the matrix products run with autocast off."""
from typing import NamedTuple, Optional

import torch
from torch import Tensor

from ..ops.checks import (check_choice, check_data, check_flag, check_number,
                          check_positive)
from ..ops.precision import autocast_off
from .error_driven_modes import alrp_errors, ap_errors, rank_sort_errors
from .error_driven_negatives import SortedNegatives
from .utils import check_scores_and_masks

__all__ = ['MODES', 'LOC_ORDERS', 'PRECISIONS', 'ErrorDrivenTerms',
           'smoothed_step', 'error_driven_terms', 'error_driven_loss',
           'ErrorDrivenLossFunction', 'check_self_relation',
           'check_precision', 'error_driven_inputs']

MODES = ('ap', 'rs', 'alrp')
#: ``loc_order`` of 'alrp': the authors' hard order, the earlier smoothed one
LOC_ORDERS = ('hard', 'smoothed')
#: ``precision``: the dtype the core computes in
PRECISIONS = {'float64': torch.float64, 'float32': torch.float32}


def smoothed_step(x: Tensor, delta: float) -> Tensor:
    """``H(x)``: 0 below ``-delta``, 1 above ``delta``, linear between
    (two kernels: ``0.5 + x * (1 / (2 delta))``, clamped)."""
    return torch.rsub(x, 0.5, alpha=-1 / (2 * delta)).clamp(0, 1)


def check_self_relation(owner: str, value) -> float:
    """``self_relation`` checked: a number in (0, 1]."""
    return check_number(owner, 'self_relation', value, low=0, high=1,
                        low_open=True)


def check_precision(owner: str, value) -> str:
    """``precision`` checked: ``'float64'`` or ``'float32'``."""
    return check_choice(owner, 'precision', value, tuple(PRECISIONS))


class ErrorDrivenTerms(NamedTuple):
    """What :func:`error_driven_terms` returns (``loss``, ``parts`` and
    ``loc_weight`` in its ``out_dtype``, by default the working precision,
    ``precision``).

    Attributes:
        loss (Tensor): The value (scalar): ``1 - AP`` ('ap'), ``L_RS``
            ('rs') or the classification component of aLRP ('alrp').
        parts (Tensor): (3,) ``(ranking, sorting, loc)``, also read as the
            properties :attr:`ranking`, :attr:`sorting` and :attr:`loc`.
        grad (Tensor, optional): The update dL/ds (n,) in the scores'
            dtype at unit upstream scale; None without ``with_grad``.
        loc_weight (Tensor): 'alrp': ``v`` (P,), ``d loc / d e`` with the
            ranks fixed; else empty.
        num_pos (int): ``|P|``.
    """
    loss: Tensor
    parts: Tensor
    grad: Optional[Tensor]
    loc_weight: Tensor
    num_pos: int

    @property
    def ranking(self) -> Tensor:
        """``1/|P| sum_i N_FP(i) / rank(i)`` (scalar)."""
        return self.parts[0]

    @property
    def sorting(self) -> Tensor:
        """'rs': ``1/|P| sum_i (l_S(i) - l*_S(i))``; else 0."""
        return self.parts[1]

    @property
    def loc(self) -> Tensor:
        """'alrp': the localisation component with the given errors; else
        0."""
        return self.parts[2]


def error_driven_terms(scores: Tensor,
                       positives: Tensor,
                       delta: float,
                       mode: str = 'rs',
                       negatives: Optional[Tensor] = None,
                       quality: Optional[Tensor] = None,
                       loc_error: Optional[Tensor] = None,
                       with_grad: bool = True,
                       self_relation: float = 0.5,
                       own_loc_in_update: bool = False,
                       loc_order: str = 'hard',
                       precision: str = 'float64',
                       out_dtype: Optional[torch.dtype] = None
                       ) -> ErrorDrivenTerms:
    """Value and error-driven update of one ranking (see the module doc).

    Fixed shapes given ``|P|``: the one read back to the host is
    ``positives.nonzero()`` for a mask (none for indices).

    Args:
        scores (Tensor): Finite scores (n,), not checked here; any shape is
            read row-major.
        positives (Tensor): Bool (n,), or the indices (P,) of the positives
            (int64, ascending, distinct), which saves the one read.
        delta (float): Half-width of the smoothed step, > 0.
        mode (str): One of :data:`MODES`.
        negatives (Tensor, optional): Bool, broadcastable to ``scores`` (a mask
            of rows); scores in neither it nor the positives take no part.
            Defaults to every score that is not a positive.
        quality (Tensor, optional): 'rs': labels ``y`` (P,) in [0, 1], in index
            order. Defaults to ones (sorting error 0).
        loc_error (Tensor, optional): 'alrp': localisation errors ``e`` (P,) >=
            0, in index order. Defaults to zeros.
        with_grad (bool): Compute the update. Defaults to True.
        self_relation (float): 'rs': a positive's relation to itself, in (0,
            1]. Defaults to 0.5 (authors).
        own_loc_in_update (bool): 'alrp': put ``e_i`` in positive ``i``'s
            update. Defaults to False (authors).
        loc_order (str): 'alrp': :data:`LOC_ORDERS`. Defaults to 'hard'.
        precision (str): The working dtype (:data:`PRECISIONS`). Defaults to
            'float64'.
        out_dtype (torch.dtype, optional): The dtype of ``loss``, ``parts`` and
            ``loc_weight`` (rounded as written). Defaults to ``precision``.

    Returns:
        ErrorDrivenTerms: see there.
    """
    owner = 'error_driven_terms'
    check_positive(owner, 'delta', delta)
    check_choice(owner, 'mode', mode, MODES)
    self_relation = check_self_relation(owner, self_relation)
    own_loc_in_update = check_flag(owner, 'own_loc_in_update',
                                   own_loc_in_update)
    check_choice(owner, 'loc_order', loc_order, LOC_ORDERS)
    dtype = PRECISIONS[check_precision(owner, precision)]
    if positives.dtype == torch.bool:
        positives = positives.reshape(-1).nonzero().squeeze(1)  # the read
    with autocast_off(scores.device):  # float32 products stay float32
        return _terms(scores, positives, delta, mode, negatives, quality,
                      loc_error, with_grad, self_relation, own_loc_in_update,
                      loc_order, dtype, out_dtype or dtype)


def _terms(scores, pos_idx, delta, mode, negatives, quality, loc_error,
           with_grad, self_relation, own_loc_in_update, loc_order,
           dtype, out_dtype) -> ErrorDrivenTerms:
    """:func:`error_driven_terms` after its checks, with the positives'
    indices, in ``dtype``, its outputs in ``out_dtype``."""
    out = dict(dtype=out_dtype, device=scores.device)
    scores = scores.detach()
    n, num_pos = scores.numel(), pos_idx.shape[0]
    if num_pos == 0:
        grad = scores.new_zeros(scores.shape) if with_grad else None
        return ErrorDrivenTerms(torch.zeros((), **out),
                                torch.zeros(3, **out), grad,
                                torch.zeros(0, **out), 0)
    u = scores.take(pos_idx).to(dtype)  # (P,)
    negs = SortedNegatives(scores, negatives, u, delta, pos_idx)
    # explicit P x P relations h_pp[i, k] = H(s_k - s_i), self relation
    # on the diagonal
    diff = u[None, :] - u[:, None]
    h_pp = smoothed_step(diff, delta)
    if mode == 'rs':
        if self_relation != 0.5:  # H(0) = 0.5 there already
            h_pp.fill_diagonal_(self_relation)
        y = torch.ones_like(u) if quality is None else \
            quality.detach().to(dtype)
        errors = rank_sort_errors(h_pp, negs.nfp, y)
    elif mode == 'alrp':
        h_pp.fill_diagonal_(1)
        e = torch.zeros_like(u) if loc_error is None else \
            loc_error.detach().to(dtype)
        errors = alrp_errors(diff, h_pp, negs.nfp, e, own_loc_in_update,
                             loc_order)
    else:
        h_pp.fill_diagonal_(1)
        errors = ap_errors(h_pp, negs.nfp)
    absent = torch.zeros_like(u)  # of the parts a mode does not have
    # each output rounded to out_dtype as it is written (out=: no cast
    # kernel)
    if mode == 'rs':
        # the value is the sum of two parts in the working precision: with
        # t = (p0, p0, p1, 0, 0, 0) (p the parts), t[:4] + t[2:] is
        # (value, p0, p1, 0) in one addition
        t = torch.stack([errors.ranking, errors.ranking, errors.sorting,
                         absent, absent, absent]).sum(1) / num_pos
        both = torch.add(t[:4], t[2:], out=t.new_empty(4, **out))
        loss, parts = both[0], both[1:]
    else:
        parts = torch.div(torch.stack([
            errors.ranking,
            absent if errors.sorting is None else errors.sorting,
            absent if errors.loc is None else errors.loc
        ]).sum(1), num_pos, out=u.new_empty(3, **out))
        loss = parts[0]
    loc_weight = parts.new_empty(0) if errors.loc_weight is None else \
        torch.div(errors.loc_weight, num_pos, out=parts.new_empty(num_pos))
    grad = None
    if with_grad:
        # every score gets its negative's update (0 if it is none), then
        # the positives theirs, each rounded to the scores' dtype as it is
        # written (out=: no cast kernel)
        grad = scores.new_empty(n).index_put_((negs.index, ), negs.update(
            errors.to_negatives / num_pos, scores.dtype))
        grad = grad.index_put_((pos_idx, ), torch.div(
            errors.pos_loss, -num_pos, out=grad.new_empty(num_pos))
                               ).view(scores.shape)
    return ErrorDrivenTerms(loss, parts, grad, loc_weight, num_pos)


class ErrorDrivenLossFunction(torch.autograd.Function):
    """Forward: the value of :func:`error_driven_terms`; backward: its
    error-driven update times ``grad_output`` (nothing for the masks, the
    labels and the options: the update is not a derivative of them).

    Outputs ``(loss, parts, loc_weight)``: ``parts = (ranking, sorting,
    loc)`` and ``loc_weight`` are not differentiable.
    """

    @staticmethod
    def forward(ctx, scores: Tensor, positives: Tensor,
                negatives: Optional[Tensor], delta: float, mode: str,
                quality: Optional[Tensor], loc_error: Optional[Tensor],
                self_relation: float = 0.5, own_loc_in_update: bool = False,
                loc_order: str = 'hard', precision: str = 'float64'):
        terms = error_driven_terms(
            scores, positives, delta, mode, negatives, quality, loc_error,
            with_grad=ctx.needs_input_grad[0], self_relation=self_relation,
            own_loc_in_update=own_loc_in_update, loc_order=loc_order,
            precision=precision, out_dtype=torch.float64 if scores.dtype
            == torch.float64 else torch.float32)
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(terms.grad)
        ctx.mark_non_differentiable(terms.parts, terms.loc_weight)
        return terms.loss, terms.parts, terms.loc_weight

    @staticmethod
    def backward(ctx, grad_loss, grad_parts, grad_loc_weight):
        grad, = ctx.saved_tensors
        if grad is None or grad_loss is None:
            return (None, ) * 11
        return (grad * grad_loss.to(grad.dtype), ) + (None, ) * 10


def error_driven_loss(scores: Tensor, positives: Tensor, delta: float,
                      mode: str = 'rs', negatives: Optional[Tensor] = None,
                      quality: Optional[Tensor] = None,
                      loc_error: Optional[Tensor] = None,
                      self_relation: float = 0.5,
                      own_loc_in_update: bool = False,
                      loc_order: str = 'hard', precision: str = 'float64'):
    """:class:`ErrorDrivenLossFunction` applied: ``(loss, parts,
    loc_weight)`` with the error-driven update as the loss's backward.

    Args: as :func:`error_driven_terms`; ``scores`` may require grad.

    Returns:
        tuple[Tensor, Tensor, Tensor]: The value (scalar, float32 or
        float64 like the scores), ``(ranking, sorting, loc)`` (3,) and the
        'alrp' localisation weights (P,) (else empty).
    """
    return ErrorDrivenLossFunction.apply(scores, positives, negatives, delta,
                                         mode, quality, loc_error,
                                         self_relation, own_loc_in_update,
                                         loc_order, precision)


def error_driven_inputs(owner: str, scores: Tensor, positives: Tensor,
                        negatives: Optional[Tensor], delta: float,
                        name: str = '', values: Optional[Tensor] = None):
    """Checked and flattened inputs of :func:`error_driven_loss`: the body
    of the functional forms (``rank_sort_loss``, ``alrp_loss``,
    ``error_driven_ap_loss``).

    Args:
        owner (str): The function named in the messages.
        scores (Tensor): Scores (...), finite; one ranking of all of them.
        positives (Tensor): Binary (...), the scores' shape.
        negatives (Tensor, optional): Binary (...); scores in neither take
            no part. None: every score that is not a positive.
        delta (float): Half-width of the smoothed step, > 0.
        name (str): The name of ``values`` in the messages.
        values (Tensor, optional): Per-positive values (``quality``,
            ``loc_error``) of the scores' shape, in [0, 1] at the
            positives.

    Returns:
        tuple: Scores (n,), the positives' indices (P,) (the one read of
        the data), negatives (n,) bool (None: all others) and ``values``
        at the positives (P,) (None without).
    """
    check_positive(owner, 'delta', delta)
    masks = dict(positives=positives)
    if negatives is not None:
        masks['negatives'] = negatives
    check_scores_and_masks(owner, scores, masks, allow_empty=True)
    flat_pos = positives.reshape(-1).bool()
    pos_idx = flat_pos.nonzero().squeeze(1)
    flat_neg = None if negatives is None else negatives.reshape(-1).bool()
    picked = None
    if values is not None:
        if not isinstance(values, Tensor) or values.shape != scores.shape \
                or not values.is_floating_point():
            raise ValueError(
                f'{owner}: {name} must be a float tensor of the scores '
                f'shape {tuple(scores.shape)}, got '
                f'{getattr(values, "shape", values)}')
        picked = values.reshape(-1)[pos_idx]
        at = picked.detach()
        check_data(owner, [((at.clamp(0, 1) == at).all(),
                            f'{name} must be finite and in [0, 1] at the '
                            'positives')])
    return scores.reshape(-1), pos_idx, flat_neg, picked
