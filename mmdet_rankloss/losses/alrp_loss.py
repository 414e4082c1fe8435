"""aLRP Loss (Oksuz et al., NeurIPS 2020) and its self-balance hook.

``L_aLRP = 1/|P| sum_{i in P} (N_FP(i) + E_loc(i)) / rank(i)`` with
``E_loc(i) = e_i + sum_{k in P, k != i} H(x_ik) e_k``: the classification
component ``1/|P| sum_i N_FP(i) / rank(i)`` and the localisation component
``L_loc = 1/|P| sum_i E_loc(i) / rank(i)``. The scores are trained by the
error-driven update (:mod:`.error_driven`, mode ``'alrp'``): a positive's
whole error ``l_LRP(i)``, localisation included, is distributed over the
negatives above it, so a badly localised positive is pushed harder. The box
branch is trained through ``L_loc`` with the ranks fixed, ``dL_loc / de_k =
1/|P| (1 / rank(k) + sum_{i != k} H(x_ik) / rank(i))``.

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

from ..ops.checks import check_flag, check_positive
from .error_driven import ErrorDrivenDetectionLoss

__all__ = ['ALRPLoss', 'ALRPSelfBalanceHook']


@MODELS.register_module()
class ALRPLoss(ErrorDrivenDetectionLoss):
    """aLRP Loss for a dense head: classification and localisation.

    Call it (:meth:`~.error_driven.ErrorDrivenDetectionLoss.forward`) with
    the positives' localisation errors ``loc_error=`` (N,)
    (read at the positive rows, in [0, 1], differentiable: the head passes
    ``(1 - GIoU) / 2`` of each positive's predicted box). Without them the
    errors are 0 (the classification component is then AP Loss with the
    smoothed step).

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
    """
    mode = 'alrp'
    per_anchor_input = 'loc_error'

    def __init__(self, delta: float = 1.0, score_space: str = 'logits',
                 loss_weight: float = 1.0, sb_weight: float = 50.0,
                 self_balance: bool = True) -> None:
        super().__init__(delta, score_space, loss_weight)
        owner = type(self).__name__
        self.self_balance = check_flag(owner, 'self_balance', self_balance)
        self.register_buffer(
            'sb_weight',
            torch.tensor(check_positive(owner, 'sb_weight', sb_weight),
                         dtype=torch.float64))
        # (sum of L_aLRP, sum of L_loc) over the epoch's iterations
        self.register_buffer('_sb_sums', torch.zeros(2, dtype=torch.float64),
                             persistent=False)

    def _outputs(self, loss, parts, loc_weight, loc_error,
                 zero) -> Dict[str, Tensor]:
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
