"""aLRP Loss (Oksuz et al., NeurIPS 2020) and its self-balance hook.

``L_aLRP = 1/|P| sum_{i in P} (N_FP(i) + E_loc(i)) / rank(i)``, with
``E_loc(i)`` the sum of the errors ``e_k`` of the positives at or above ``i``
in the score order (authors; ``loc_order='smoothed'``: ``e_i + sum_{k != i}
H(x_ik) e_k``, the paper's form) and ``e = loc_error / (1 - tau)``. The scores
get the error-driven update (:mod:`.error_driven`, mode ``'alrp'``); the box
branch is trained through ``L_loc = 1/|P| sum_i E_loc(i) / rank(i)`` with the
ranks fixed. Self-balance: ``L_loc`` is multiplied by the buffer ``w_sb`` (50
at first), set to ``L_aLRP / L_loc`` by :class:`ALRPSelfBalanceHook`
(docs/losses.md)."""
import logging
from typing import Dict, List, Optional, Tuple, Union

import torch
from torch import Tensor

from ..ops.checks import (check_choice, check_flag, check_int, check_number,
                          check_positive)
from ..optional_mmdet import (HOOKS, MODELS, Hook, all_reduce, get_dist_info,
                              is_model_wrapper, print_log)
from .error_driven import LOC_ORDERS, error_driven_inputs, error_driven_loss
from .error_driven_head import ErrorDrivenDetectionLoss

__all__ = ['alrp_loss', 'ALRPLoss', 'ALRPSelfBalanceHook']


def _check_tau(owner: str, tau) -> float:
    tau = check_number(owner, 'tau', tau, low=0)
    if tau >= 1:
        raise ValueError(f'{owner}: tau must be a finite number in [0, 1), '
                         f'got {tau!r}')
    return tau


def _loc_term(loss: Tensor, loc_weight: Tensor,
              loc_error: Optional[Tensor]) -> Tensor:
    """``L_loc = sum_k v_k e_k`` (ranks fixed), differentiable in the
    errors ``e`` (P,) (divided by ``1 - tau``); a zero in the graph of
    ``loss`` without them."""
    if loc_error is None or not loc_error.numel():
        return loss * 0
    return torch.dot(loc_weight.to(loc_error.dtype), loc_error).to(loss.dtype)


def alrp_loss(scores: Tensor,
              positives: Tensor,
              loc_error: Optional[Tensor] = None,
              delta: float = 1.0,
              sb_weight: float = 50.0,
              tau: float = 0.5,
              own_loc_in_update: bool = False,
              loc_order: str = 'hard',
              negatives: Optional[Tensor] = None,
              precision: str = 'float64') -> Tensor:
    """aLRP Loss of one ranking of all ``scores``: ``L_cls + sb_weight *
    L_loc`` (module docstring), :class:`ALRPLoss` with a fixed SB weight.

    Args:
        scores (Tensor): Finite scores (...), e.g. (N, C) logits; all of them
            are one ranking.
        positives (Tensor): Binary (...), the scores' shape.
        loc_error (Tensor, optional): Localisation errors, the scores' shape,
            in [0, 1] at the positives (e.g. ``(1 - GIoU) / 2``),
            differentiable. Defaults to None: 0.
        delta (float): Half-width of the smoothed step, > 0. Defaults to 1.0.
        sb_weight (float): Weight ``w_sb`` of ``L_loc``, > 0. Defaults to 50.
        tau (float): The errors are divided by ``1 - tau``, in [0, 1). Defaults
            to 0.5 (paper).
        own_loc_in_update (bool): See :class:`ALRPLoss`. Defaults to False.
        loc_order (str): ``'hard'`` or ``'smoothed'``, see :class:`ALRPLoss`.
            Defaults to ``'hard'``.
        negatives (Tensor, optional): Binary (...); scores in neither take no
            part. Defaults to None: every score that is not a positive.
        precision (str): The core's dtype, ``'float64'`` or ``'float32'``.
            Defaults to ``'float64'``.

    Returns:
        Tensor: Scalar loss (fp32, fp64 for fp64 scores).
    """
    owner = 'alrp_loss'
    tau = _check_tau(owner, tau)
    sb_weight = check_positive(owner, 'sb_weight', sb_weight)
    flat, pos_idx, negs, errors = error_driven_inputs(
        owner, scores, positives, negatives, delta, 'loc_error', loc_error)
    if errors is not None and tau:
        errors = errors / (1 - tau)
    loss, _, loc_weight = error_driven_loss(
        flat, pos_idx, delta, 'alrp', negs, None,
        None if errors is None else errors.detach(),
        own_loc_in_update=own_loc_in_update, loc_order=loc_order,
        precision=precision)
    return loss + sb_weight * _loc_term(loss, loc_weight, errors)


@MODELS.register_module()
class ALRPLoss(ErrorDrivenDetectionLoss):
    """aLRP Loss for a dense head: classification and localisation.

    Call it with ``loc_error=`` (N,), the positives' localisation errors in [0,
    1], differentiable (the heads pass ``(1 - GIoU) / 2``); they are divided by
    ``1 - tau`` (``tau = 0.5``: ``1 - GIoU``, the authors' error). Without them
    the errors are 0. Returns ``loss_alrp_cls + loss_alrp_loc`` (``w_sb *
    L_loc``), all times ``loss_weight``; with ``log_diagnostics`` the dict of
    :meth:`terms` with ``alrp_sb_weight`` too.

    Args:
        delta (float): Half-width of the smoothed step in logit units, > 0.
            Defaults to 1.0 (paper).
        score_space (str): Defaults to ``'logits'``.
        loss_weight (float): Defaults to 1.0.
        sb_weight (float): Initial SB weight of ``L_loc``, > 0. Defaults to
            50.0 (paper).
        self_balance (bool): Let :class:`ALRPSelfBalanceHook` update the SB
            weight. Defaults to True.
        tau (float): The errors are divided by ``1 - tau``, in [0, 1). Defaults
            to 0.5 (paper); 0 uses them as given (docs/losses.md).
        own_loc_in_update (bool): Put a positive's own ``e_i`` in its update
            (the paper's ``l_LRP(i)``). Defaults to False (authors).
        loc_order (str): ``E_loc`` over the hard score order (``'hard'``,
            authors, ties by index) or the smoothed relations (``'smoothed'``).
            Defaults to ``'hard'``.
        precision (str): The core's dtype, ``'float64'`` or ``'float32'``.
            Defaults to ``'float64'``.
        log_diagnostics (bool): Return the dict instead of the scalar loss.
            Defaults to False.
    """
    mode = 'alrp'
    per_anchor_input = 'loc_error'

    def __init__(self, delta: float = 1.0, score_space: str = 'logits',
                 loss_weight: float = 1.0, sb_weight: float = 50.0,
                 self_balance: bool = True, tau: float = 0.5,
                 own_loc_in_update: bool = False,
                 loc_order: str = 'hard',
                 precision: str = 'float64',
                 log_diagnostics: bool = False) -> None:
        super().__init__(delta, score_space, loss_weight, precision,
                         log_diagnostics)
        owner = type(self).__name__
        self.self_balance = check_flag(owner, 'self_balance', self_balance)
        self.tau = _check_tau(owner, tau)
        self.own_loc_in_update = check_flag(owner, 'own_loc_in_update',
                                            own_loc_in_update)
        self.loc_order = check_choice(owner, 'loc_order', loc_order,
                                      LOC_ORDERS)
        self.register_buffer(
            'sb_weight',
            torch.full((), check_positive(owner, 'sb_weight', sb_weight),
                       dtype=torch.float64))
        # (sum of L_aLRP, sum of L_loc) of the training calls since
        # ALRPSelfBalanceHook (or update_self_balance) last took them
        self.register_buffer('_sb_sums', torch.zeros(2, dtype=torch.float64),
                             persistent=False)

    def extra_repr(self) -> str:
        return (f'{super().extra_repr()}, tau={self.tau}, '
                f'own_loc_in_update={self.own_loc_in_update}, '
                f'loc_order={self.loc_order!r}')

    def _core_options(self) -> dict:
        return dict(own_loc_in_update=self.own_loc_in_update,
                    loc_order=self.loc_order)

    def _positive_inputs(self, quality, loc_error):
        """The checked errors (in [0, 1]) divided by ``1 - tau``."""
        if loc_error is not None and self.tau:
            loc_error = loc_error / (1 - self.tau)
        return quality, loc_error

    def _outputs(self, loss, parts, loc_weight,
                 loc_error) -> Dict[str, Tensor]:
        # loc_error: divided by 1 - tau; parts[2] = L_loc unweighted
        loc = _loc_term(loss, loc_weight, loc_error)
        if self.training and torch.is_grad_enabled():
            # (L_cls + L_loc, 0 + L_loc): parts = (L_cls, 0, L_loc)
            self._sb_sums += parts[:2] + parts[2]
        sb = self.sb_weight.to(loss.dtype)
        return dict(loss_alrp_cls=self._weighted(loss),
                    loss_alrp_loc=self._weighted(sb) * loc,
                    alrp_sb_weight=sb.detach())

    def update_self_balance(self,
                            sums: Optional[Tensor] = None) -> Optional[float]:
        """Set ``w_sb = sum L_aLRP / sum L_loc`` over the iterations the sums
        cover.

        Args:
            sums (Tensor, optional): ``(sum of L_aLRP, sum of L_loc)``, already
                summed over processes. Defaults to None: the loss's own sums
                since last taken, summed over processes, then restarted.

        Returns:
            float, optional: The new weight; None when unchanged
            (``self_balance=False``, or no localisation error seen).
        """
        if sums is None:
            sums = self._sb_sums.clone()
            if get_dist_info()[1] > 1:
                all_reduce(sums, op='sum')
            self._sb_sums.zero_()
        sums = sums.detach().to(torch.float64)
        if not self.self_balance or float(sums[1]) <= 0:
            return None
        self.sb_weight.fill_(float(sums[0] / sums[1]))
        return float(self.sb_weight)


#: the authors' SB period in iterations (their COCO configs: one epoch at
#: batch 32; ``period_epochs=1`` of :class:`ALRPSelfBalanceHook` is the same
#: period at any batch)
AUTHORS_SB_PERIOD = 3665
#: the checkpoint key of :class:`ALRPSelfBalanceHook`'s state
SB_STATE_KEY = 'alrp_self_balance'


def _warmup_schedulers():
    """MMEngine's ``LinearLR``, ``ConstantLR`` and MMDetection's
    ``QuadraticWarmupLR`` (``()`` without it)."""
    from mmengine.optim.scheduler import ConstantLR, LinearLR
    try:
        from mmdet.engine.schedulers import QuadraticWarmupLR
    except ImportError:  # pragma: no cover - older MMDetection
        QuadraticWarmupLR = ()
    return LinearLR, ConstantLR, QuadraticWarmupLR


def warmup_end(param_schedulers, max_iters: int,
               epoch_length: Optional[int] = None) -> int:
    """The iteration at which the learning-rate warm-up ends (at most
    ``max_iters``; 0 without one): the largest ``end`` of a rising
    ``LinearLR``, a ``ConstantLR`` with ``factor < 1`` or a
    ``QuadraticWarmupLR``; an epoch-based one ends after ``end * epoch_length``
    iterations.

    Args:
        param_schedulers: ``runner.param_schedulers``: None, a list of
            schedulers, or a dict of such lists (one per optimizer).
        max_iters (int): The run's training iterations.
        epoch_length (int, optional): Iterations per epoch, needed for an
            epoch-based warm-up.
    """
    if param_schedulers is None:
        return 0
    if isinstance(param_schedulers, dict):
        schedulers = [s for group in param_schedulers.values() for s in group]
    else:
        schedulers = list(param_schedulers)
    linear, constant, quadratic = _warmup_schedulers()
    end = 0
    for scheduler in schedulers:
        if isinstance(scheduler, linear):
            rising = scheduler.start_factor < scheduler.end_factor
        elif isinstance(scheduler, constant):
            rising = scheduler.factor < 1
        else:
            rising = bool(quadratic) and isinstance(scheduler, quadratic)
        if not rising:
            continue
        stop = int(scheduler.end)
        if scheduler.by_epoch:
            if epoch_length is None:
                raise ValueError(
                    'ALRPSelfBalanceHook: an epoch-based warm-up '
                    f'({type(scheduler).__name__}, end={stop} epochs) needs '
                    'the epoch length; give the hook begin= (in iterations)')
            stop *= epoch_length
        end = max(end, min(stop, max_iters))
    return end


def default_sb_period(max_iters: int, begin: int) -> int:
    """``min(3665, max(1, (max_iters - begin) // 8))``: the authors' period,
    or an eighth of the training after the warm-up when that is shorter (a
    short run still gets about eight updates)."""
    return min(AUTHORS_SB_PERIOD, max(1, (max_iters - begin) // 8))


def _alrp_losses(model) -> List[Tuple[str, ALRPLoss]]:
    model = model.module if is_model_wrapper(model) else model
    return [(name, module) for name, module in model.named_modules()
            if isinstance(module, ALRPLoss)]


@HOOKS.register_module()
class ALRPSelfBalanceHook(Hook):
    """Sets the SB weight of every :class:`ALRPLoss` of the model on a period
    of training iterations, as the authors' code does, and logs it (add it to
    ``custom_hooks``; docs/losses.md).

    From iteration ``begin`` on (0-based; the warm-up is not measured), the
    hook takes each loss's sums of ``L_aLRP`` and ``L_loc`` after every
    training iteration; an iteration in which no process had a positive is not
    counted. After ``period`` counted iterations it sets ``w_sb = sum L_aLRP /
    sum L_loc`` (:meth:`ALRPLoss.update_self_balance`). Under DDP the sums are
    all-reduced every measured iteration; its state
    (``checkpoint['alrp_self_balance']``) makes a resume exact.

    Args:
        period (int | str, optional): Counted iterations per update, >= 1.
            Defaults to None: ``period_epochs`` when given, else
            :func:`default_sb_period`. ``'epoch'``: an update after every
            epoch, warm-up included (``begin`` must be None).
        begin (int, optional): The first iteration measured, >= 0. Defaults to
            None: :func:`warmup_end` of ``runner.param_schedulers``.
        period_epochs (float, optional): The period in epochs of images, > 0:
            ``max(1, round(period_epochs * len(runner.train_dataloader)))``
            iterations (1: the authors' period at any batch). Defaults to None.
            Not with ``period``.
    """
    priority = 'NORMAL'  # before CheckpointHook (VERY_LOW)

    def __init__(self, period: Union[int, str, None] = None,
                 begin: Optional[int] = None,
                 period_epochs: Optional[float] = None) -> None:
        owner = type(self).__name__
        if period_epochs is not None:
            if period is not None:
                raise ValueError(
                    f'{owner}: period must be None when period_epochs is '
                    f'given (one period, in iterations or in epochs), got '
                    f'period={period!r}, period_epochs={period_epochs!r}')
            period_epochs = check_positive(owner, 'period_epochs',
                                           period_epochs)
        if period == 'epoch':
            if begin is not None:
                raise ValueError(
                    f"{owner}: begin must be None with period='epoch' (the "
                    f'earlier per-epoch update measures every iteration), '
                    f'got {begin!r}')
        elif period is not None:
            period = check_int(owner, 'period', period, minimum=1)
        if begin is not None:
            begin = check_int(owner, 'begin', begin, minimum=0)
        self.period = period
        self.begin = begin
        self.period_epochs = period_epochs
        self.by_epoch = period == 'epoch'
        #: resolved (begin, period) of the run, set before training
        self.schedule: Optional[Tuple[int, int]] = None
        #: per loss name: sums (2,) float64 on the CPU and the count
        self._state: Dict[str, dict] = {}
        self._pending: Optional[dict] = None
        self._missing = False
        #: (name, loss) of the model's ALRPLoss modules, found once
        self._losses: Optional[List[Tuple[str, ALRPLoss]]] = None

    # ------------------------------------------------------------ schedule
    def resolve(self, runner) -> Tuple[int, int]:
        """``(begin, period)`` of ``runner``'s training (see the class doc)."""
        max_iters = int(runner.max_iters)
        try:
            epoch_length = len(runner.train_dataloader)
        except Exception:  # no data loader (a test double) or no len
            epoch_length = None
        begin = self.begin
        if begin is None:
            begin = warmup_end(
                getattr(runner, 'param_schedulers', None), max_iters,
                epoch_length)
        if self.period_epochs is not None:
            if not epoch_length:
                raise ValueError(
                    f'{type(self).__name__}: period_epochs='
                    f'{self.period_epochs!r} needs the epoch length, '
                    'len(runner.train_dataloader), got '
                    f'{epoch_length!r}; give period= (in iterations)')
            period = max(1, round(self.period_epochs * epoch_length))
        elif self.period is not None:
            period = self.period
        else:
            period = default_sb_period(max_iters, begin)
        return begin, period

    def _ensure_schedule(self, runner) -> Tuple[int, int]:
        if self.schedule is None:
            self.schedule = self.resolve(runner)
        return self.schedule

    def before_train(self, runner) -> None:
        losses = self._losses = _alrp_losses(runner.model)
        if not losses:
            print_log(
                'ALRPSelfBalanceHook: the model has no ALRPLoss; the hook '
                'does nothing', logger='current', level=logging.WARNING)
            return
        if self.by_epoch:
            runner.logger.info(
                'aLRP self-balance: the SB weight is set after every '
                "training epoch (period='epoch')")
            return
        begin, period = self._ensure_schedule(runner)
        updates = max(0, int(runner.max_iters) - begin) // period
        epochs = '' if self.period_epochs is None else \
            f' ({self.period_epochs:g} epoch(s) of images)'
        runner.logger.info(
            f'aLRP self-balance: measured from iteration {begin}, the SB '
            f'weight is set every {period} iterations with positives'
            f'{epochs} (at most {updates} updates in {runner.max_iters} '
            'iterations)')
        self._restore(runner, losses, begin, period)

    # -------------------------------------------------------------- update
    def after_train_iter(self, runner, batch_idx: int, data_batch=None,
                         outputs=None) -> None:
        if self.by_epoch:
            return
        if self._losses is None:
            self._losses = _alrp_losses(runner.model)
        losses = self._losses
        if not losses:
            return
        begin, period = self._ensure_schedule(runner)
        # every process takes its sums of the iteration (and drops them
        # before `begin`): the same branch everywhere, runner.iter agrees
        local = torch.stack([loss._sb_sums.detach().clone()
                             for _, loss in losses])
        for _, loss in losses:
            loss._sb_sums.zero_()
        if runner.iter < begin:
            return
        # (sum of L_aLRP, sum of L_loc, had positives) per loss
        taken = torch.cat([local, (local != 0).any(1, keepdim=True).to(
            local.dtype)], 1)
        if get_dist_info()[1] > 1:
            all_reduce(taken, op='sum')
        taken = taken.cpu()
        for (name, loss), row in zip(losses, taken):
            state = self._state.setdefault(
                name, dict(sums=torch.zeros(2, dtype=torch.float64),
                           count=0))
            if row[2] <= 0:
                continue  # no process had a positive: not counted
            state['sums'] += row[:2]
            state['count'] += 1
            if state['count'] >= period:
                weight = loss.update_self_balance(state['sums'])
                state['sums'].zero_()
                state['count'] = 0
                if weight is not None:
                    runner.logger.info(
                        f'aLRP self-balance (iteration {runner.iter + 1}): '
                        f'{name}.sb_weight = {weight:.4g}')

    def after_train_epoch(self, runner) -> None:
        if not self.by_epoch:
            return
        for name, loss in _alrp_losses(runner.model):
            weight = loss.update_self_balance()
            if weight is not None:
                runner.logger.info(
                    f'aLRP self-balance: {name}.sb_weight = {weight:.4g}')

    # -------------------------------------------------------------- resume
    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        if self.by_epoch or self.schedule is None:
            return
        begin, period = self.schedule
        checkpoint[SB_STATE_KEY] = dict(
            begin=begin, period=period,
            modules={name: dict(sums=state['sums'].clone(),
                                count=int(state['count']))
                     for name, state in self._state.items()})

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        self._pending = checkpoint.get(SB_STATE_KEY)
        self._missing = SB_STATE_KEY not in checkpoint

    def _restore(self, runner, losses, begin: int, period: int) -> None:
        pending, self._pending = self._pending, None
        missing, self._missing = self._missing, False
        if runner.iter == 0:
            return  # a new run (load_from or none): a new period
        if pending is None:
            if missing and runner.iter > begin:
                print_log(
                    f'ALRPSelfBalanceHook: the resumed checkpoint has no '
                    f"'{SB_STATE_KEY}' (written without this hook's "
                    'iteration period); the current SB period restarts '
                    'empty, so the updates come later than in an '
                    'uninterrupted run', logger='current',
                    level=logging.WARNING)
            return
        if (pending['begin'], pending['period']) != (begin, period):
            print_log(
                f'ALRPSelfBalanceHook: the checkpoint was written with begin='
                f"{pending['begin']}, period={pending['period']}; this run "
                f'has begin={begin}, period={period}', logger='current',
                level=logging.WARNING)
        names = {name for name, _ in losses}
        self._state = {
            name: dict(sums=state['sums'].detach().cpu().to(torch.float64),
                       count=int(state['count']))
            for name, state in pending['modules'].items() if name in names
        }
