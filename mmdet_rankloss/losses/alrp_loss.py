"""aLRP Loss (Oksuz et al., NeurIPS 2020) and its self-balance hook.

``L_aLRP = 1/|P| sum_{i in P} (N_FP(i) + E_loc(i)) / rank(i)``: the
classification component ``1/|P| sum_i N_FP(i) / rank(i)`` and the
localisation component ``L_loc = 1/|P| sum_i E_loc(i) / rank(i)``, with
``E_loc(i)`` the sum of the localisation errors ``e_k`` of the positives
at or above ``i`` in the score order (the authors' code; ``loc_order=
'smoothed'``: ``e_i + sum_{k != i} H(x_ik) e_k``, the paper's smoothed
form) and ``e = loc_error / (1 - tau)``. The scores are trained by the
error-driven update (:mod:`.error_driven`, mode ``'alrp'``): a positive's
error ``(N_FP(i) + sum_{k != i} H(x_ik) e_k) / rank(i)`` is distributed
over the negatives above it (``own_loc_in_update=True`` adds its own
``e_i``, the paper's ``l_LRP(i)``). The box branch is trained through
``L_loc`` with the ranks fixed (``dL_loc / de_k = 1/|P| sum_{i at or below
k} 1 / rank(i)`` with the hard order).

Self-balance (SB, the paper's section on balancing): the localisation
component is multiplied by ``w_sb``. The classification update of the
positives sums to ``-L_aLRP`` (each positive gets ``-l_LRP(i) / |P|``)
while the localisation gradient scales with ``L_loc``; SB sets ``w_sb =
L_aLRP / L_loc`` with both averaged over the previous epoch, starting from
50. Implemented as running sums in the loss (training mode, detached) and
:class:`ALRPSelfBalanceHook`, which sets ``w_sb`` at the end of every
training epoch (sums all-reduced under DDP). ``w_sb`` is a buffer: it is
saved in checkpoints and restored on resume.
"""
from typing import Dict, Optional

import torch
from mmengine.dist import all_reduce, get_dist_info
from mmengine.hooks import Hook
from mmengine.model import is_model_wrapper
from torch import Tensor

from mmdet.registry import HOOKS, MODELS

from ..ops.checks import check_choice, check_flag, check_number, \
    check_positive
from .error_driven import LOC_ORDERS
from .error_driven_head import ErrorDrivenDetectionLoss

__all__ = ['ALRPLoss', 'ALRPSelfBalanceHook']


@MODELS.register_module()
class ALRPLoss(ErrorDrivenDetectionLoss):
    """aLRP Loss for a dense head: classification and localisation.

    Call it (:meth:`~.error_driven_head.ErrorDrivenDetectionLoss.forward`)
    with the positives' localisation errors ``loc_error=`` (N,) (read at
    the positive rows, in [0, 1], differentiable: the head passes ``(1 -
    GIoU) / 2`` of each positive's predicted box). They are divided by ``1
    - tau`` (the paper's normalisation: ``tau = 0.5`` makes them ``(1 -
    GIoU) / (2 (1 - tau)) = 1 - GIoU`` in [0, 2], the authors' error)
    before use, in the update and in ``L_loc``. Without them the errors are
    0 (the classification update is then AP Loss's up to the gate
    ``N_FP(i) > 1e-5``). The defaults follow the authors' code.

    Outputs: ``loss_alrp_cls`` (the classification component, trained by
    the error-driven update), ``loss_alrp_loc`` (``w_sb * L_loc``) and the
    logged ``alrp_sb_weight``; all losses times ``loss_weight``.

    Args:
        delta (float): Half-width of the smoothed step in logit units, > 0.
            Defaults to 1.0 (paper).
        score_space (str): Defaults to ``'logits'``.
        loss_weight (float): Defaults to 1.0.
        sb_weight (float): Initial SB weight of ``L_loc``, > 0. Defaults to
            50.0 (paper).
        self_balance (bool): Let :class:`ALRPSelfBalanceHook` update the SB
            weight (else it stays ``sb_weight``). Defaults to True.
        tau (float): The localisation errors are divided by ``1 - tau``, in
            [0, 1). Defaults to 0.5 (paper); 0 uses them as given (the
            earlier behaviour: half the localisation error, in the update
            and in ``L_loc``; on the case measured in :mod:`.error_driven`
            ``L_loc`` and its gradient halve and the classification update
            changes by 0.5 % (35 % with the positives raised by 3) of its
            largest entry).
        own_loc_in_update (bool): Put a positive's own ``e_i`` in its
            classification update. Defaults to False (authors); True is the
            paper's ``l_LRP(i)`` (the earlier behaviour).
        loc_order (str): ``E_loc`` over the hard score order (``'hard'``,
            authors, ties by index: the lower index ranks higher) or the
            smoothed relations (``'smoothed'``, the earlier behaviour).
            Defaults to ``'hard'``.
    """
    mode = 'alrp'
    per_anchor_input = 'loc_error'

    def __init__(self, delta: float = 1.0, score_space: str = 'logits',
                 loss_weight: float = 1.0, sb_weight: float = 50.0,
                 self_balance: bool = True, tau: float = 0.5,
                 own_loc_in_update: bool = False,
                 loc_order: str = 'hard') -> None:
        super().__init__(delta, score_space, loss_weight)
        owner = type(self).__name__
        self.self_balance = check_flag(owner, 'self_balance', self_balance)
        self.tau = check_number(owner, 'tau', tau, low=0)
        if self.tau >= 1:
            raise ValueError(f'{owner}: tau must be a finite number in '
                             f'[0, 1), got {tau!r}')
        self.own_loc_in_update = check_flag(owner, 'own_loc_in_update',
                                            own_loc_in_update)
        self.loc_order = check_choice(owner, 'loc_order', loc_order,
                                      LOC_ORDERS)
        self.register_buffer(
            'sb_weight',
            torch.tensor(check_positive(owner, 'sb_weight', sb_weight),
                         dtype=torch.float64))
        # (sum of L_aLRP, sum of L_loc) over the epoch's iterations
        self.register_buffer('_sb_sums', torch.zeros(2, dtype=torch.float64),
                             persistent=False)

    def extra_repr(self) -> str:
        return (f'{super().extra_repr()}, tau={self.tau}, '
                f'own_loc_in_update={self.own_loc_in_update}, '
                f'loc_order={self.loc_order!r}')

    def _core_options(self) -> dict:
        return dict(own_loc_in_update=self.own_loc_in_update,
                    loc_order=self.loc_order)

    def _positive_inputs(self, rows, quality, loc_error):
        """The checked errors (in [0, 1]) divided by ``1 - tau``."""
        if loc_error is not None and self.tau:
            loc_error = loc_error / (1 - self.tau)
        return rows, quality, loc_error

    def _outputs(self, loss, parts, loc_weight, loc_error,
                 zero) -> Dict[str, Tensor]:
        # loc_error: divided by 1 - tau; parts[2] = L_loc unweighted
        if loc_error is None or not loc_error.numel():
            loc = zero
        else:
            loc = (loc_weight.to(loc_error.dtype) * loc_error).sum().to(
                zero.dtype) + zero
        if self.training and torch.is_grad_enabled():
            self._sb_sums += torch.stack([loss.detach() + parts[2],
                                          parts[2]]).to(self._sb_sums)
        sb = self.sb_weight.to(zero.dtype)
        return dict(loss_alrp_cls=self.loss_weight * (loss + zero),
                    loss_alrp_loc=self.loss_weight * sb * loc,
                    alrp_sb_weight=sb.detach())

    def update_self_balance(self) -> Optional[float]:
        """Set ``w_sb = mean L_aLRP / mean L_loc`` of the iterations since
        the last call (summed over processes) and restart the sums.

        Returns:
            float, optional: The new weight; None when it was not changed
            (``self_balance=False``, or no localisation error seen).
        """
        sums = self._sb_sums.clone()
        if get_dist_info()[1] > 1:
            all_reduce(sums, op='sum')
        self._sb_sums.zero_()
        if not self.self_balance or float(sums[1]) <= 0:
            return None
        self.sb_weight.fill_(float(sums[0] / sums[1]))
        return float(self.sb_weight)


@HOOKS.register_module()
class ALRPSelfBalanceHook(Hook):
    """Updates the SB weight of every :class:`ALRPLoss` of the model after
    each training epoch (:meth:`ALRPLoss.update_self_balance`) and logs it.
    Add it to ``custom_hooks`` of an aLRP config."""
    priority = 'NORMAL'

    def after_train_epoch(self, runner) -> None:
        model = runner.model.module if is_model_wrapper(runner.model) \
            else runner.model
        for name, module in model.named_modules():
            if isinstance(module, ALRPLoss):
                weight = module.update_self_balance()
                if weight is not None:
                    runner.logger.info(
                        f'aLRP self-balance: {name}.sb_weight = {weight:.4g}')
