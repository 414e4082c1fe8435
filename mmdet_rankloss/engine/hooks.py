"""Hooks that make ``--resume`` continue a run exactly where it stopped
(docs/reliability.md#exact-resume): :class:`RankLossMemoryHook` saves the rank
losses' score memories (not module buffers), :class:`RandomStateHook` the
random state, both as plain data (``torch.load(weights_only=True)``)."""
import logging
import random
from typing import Any, Dict, List, Optional

import numpy as np
import torch
from mmengine.dist import all_gather_object, get_dist_info
from mmengine.hooks import CheckpointHook, Hook, LoggerHook
from mmengine.logging import print_log
from mmengine.model import is_model_wrapper
from mmengine.utils import apply_to

from mmdet.registry import HOOKS

__all__ = ['DeferredLogHook', 'RankLossMemoryHook', 'RandomStateHook']

MEMORY_KEY = 'rank_loss_memory'
RANDOM_KEY = 'random_state'


def _map_tensors(state: Any, fn) -> Any:
    """Applies ``fn`` to every tensor of a nested dict / list / tuple."""
    return apply_to(state, torch.is_tensor, fn)


def unwrap_model(model):
    return model.module if is_model_wrapper(model) else model


def memory_modules(model: torch.nn.Module) -> Dict[str, torch.nn.Module]:
    """Submodules with ``memory_state_dict()`` and
    ``load_memory_state_dict(state)`` (the AP and recall losses), by name."""
    return {
        name: module
        for name, module in unwrap_model(model).named_modules()
        if callable(getattr(module, 'memory_state_dict', None))
        and callable(getattr(module, 'load_memory_state_dict', None))
    }


@HOOKS.register_module()
class RankLossMemoryHook(Hook):
    """Saves the score memories of rank losses in checkpoints, restores them on
    resume.

    ``checkpoint['rank_loss_memory']`` is ``dict(world_size=W, modules={name:
    [state of rank 0, ..., rank W-1]})``, ``name`` the module's name in the
    model and each state its ``memory_state_dict()`` on the CPU. Under DDP the
    processes hand their memories to rank 0 before a checkpoint can be written
    (every epoch, or every ``interval`` of an iteration-based
    ``CheckpointHook``). A resume with the same number of processes gives each
    its own memory back, else rank 0's (a warning). A ``load_from`` start or a
    checkpoint without the key (a warning) starts with empty memories."""

    priority = 'NORMAL'  # before CheckpointHook (VERY_LOW) after an epoch

    def __init__(self) -> None:
        self._gathered: Optional[Dict[str, List[Any]]] = None
        self._pending: Optional[dict] = None
        self._missing = False

    # ------------------------------------------------------------ saving
    def _local_states(self, runner) -> Dict[str, Any]:
        return {
            name: _map_tensors(module.memory_state_dict(),
                               lambda t: t.detach().cpu())
            for name, module in memory_modules(runner.model).items()
        }

    def _gather(self, runner) -> None:
        """Every process's memories to every process (only rank 0 keeps
        them for the checkpoint)."""
        local = self._local_states(runner)
        _, world_size = get_dist_info()
        if world_size == 1:
            self._gathered = None  # read fresh at save time
            return
        per_rank = all_gather_object(local)
        self._gathered = {
            name: [states[name] for states in per_rank]
            for name in local
        }

    def _checkpoint_interval(self, runner) -> Optional[int]:
        for hook in runner.hooks:
            if isinstance(hook, CheckpointHook) and not hook.by_epoch:
                return hook.interval
        return None

    def after_train_epoch(self, runner) -> None:
        self._gather(runner)

    def after_train_iter(self,
                         runner,
                         batch_idx: int,
                         data_batch=None,
                         outputs=None) -> None:
        interval = self._checkpoint_interval(runner)
        if interval is not None and get_dist_info()[1] > 1 and (
                self.every_n_train_iters(runner, interval)
                or self.is_last_train_iter(runner)):
            self._gather(runner)

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        _, world_size = get_dist_info()
        if world_size == 1 or self._gathered is None:
            modules = {
                name: [state]
                for name, state in self._local_states(runner).items()
            }
        else:
            modules = self._gathered
        checkpoint[MEMORY_KEY] = dict(world_size=world_size, modules=modules)

    # --------------------------------------------------------- restoring
    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        self._pending = checkpoint.get(MEMORY_KEY)
        self._missing = MEMORY_KEY not in checkpoint

    def before_train(self, runner) -> None:
        pending, self._pending = self._pending, None
        if runner.iter == 0:
            return  # a new run (load_from or none): memories start empty
        modules = memory_modules(runner.model)
        if self._missing and modules:
            print_log(
                f'RankLossMemoryHook: the resumed checkpoint has no '
                f"'{MEMORY_KEY}' (written without this hook); the score "
                f'memories of {sorted(modules)} start empty, so the run '
                'differs from an uninterrupted one',
                logger='current',
                level=logging.WARNING)
            return
        if pending is None:
            return
        rank, world_size = get_dist_info()
        saved = pending['modules']
        unknown = sorted(set(saved) - set(modules))
        absent = sorted(set(modules) - set(saved))
        if unknown or absent:
            raise KeyError(
                f'RankLossMemoryHook: the checkpoint holds score memories '
                f'of {sorted(saved)}, the model has memory modules '
                f'{sorted(modules)} (not in the model: {unknown}, not in the '
                f'checkpoint: {absent}); resume with the config that wrote '
                'the checkpoint')
        if pending['world_size'] != world_size:
            print_log(
                f'RankLossMemoryHook: the checkpoint was written by '
                f"{pending['world_size']} processes, this run has "
                f'{world_size}: every process starts from rank 0\'s score '
                'memory',
                logger='current',
                level=logging.WARNING)
            rank = 0
        device = _model_device(runner.model)
        for name, module in modules.items():
            state = _map_tensors(saved[name][rank], lambda t: t.to(device))
            module.load_memory_state_dict(state)


def _model_device(model) -> torch.device:
    for tensor in unwrap_model(model).parameters():
        return tensor.device
    return torch.device('cpu')


@HOOKS.register_module()
class RandomStateHook(Hook):
    """Saves the random state (torch CPU and CUDA, numpy, Python) in
    checkpoints and restores it on resume, and restores it after every
    validation, so the epochs after a resume draw the same random numbers as
    the uninterrupted run.

    Exact for :class:`~mmengine.runner.EpochBasedTrainLoop` with
    ``num_workers=0`` or ``persistent_workers=False`` (persistent workers keep
    generators it cannot restore); the iteration-based loop replays the data
    pipeline of the skipped iterations."""

    priority = 'NORMAL'

    def __init__(self) -> None:
        self._pending: Optional[dict] = None
        self._before_val: Optional[dict] = None

    @staticmethod
    def get_state() -> dict:
        """The process's random state as plain tensors and numbers."""
        np_state = np.random.get_state()
        py_version, py_internal, py_gauss = random.getstate()
        state = dict(
            torch=torch.get_rng_state(),
            numpy=dict(
                name=np_state[0],
                keys=torch.from_numpy(np_state[1].astype(np.int64)),
                pos=int(np_state[2]),
                has_gauss=int(np_state[3]),
                cached_gaussian=float(np_state[4])),
            python=dict(
                version=py_version,
                internal=torch.tensor(py_internal, dtype=torch.int64),
                gauss_next=py_gauss))
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state['cuda'] = torch.cuda.get_rng_state_all()
        return state

    @staticmethod
    def set_state(state: dict) -> None:
        """Restores a state returned by :meth:`get_state`."""
        torch.set_rng_state(state['torch'].cpu())
        n = state['numpy']
        np.random.set_state((n['name'], n['keys'].numpy().astype(np.uint32),
                             n['pos'], n['has_gauss'], n['cached_gaussian']))
        p = state['python']
        random.setstate((p['version'], tuple(p['internal'].tolist()),
                         p['gauss_next']))
        if 'cuda' in state and torch.cuda.is_available():
            cuda = [s.cpu() for s in state['cuda']]
            if len(cuda) == torch.cuda.device_count():
                torch.cuda.set_rng_state_all(cuda)

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        checkpoint[RANDOM_KEY] = self.get_state()

    def after_load_checkpoint(self, runner, checkpoint: dict) -> None:
        self._pending = checkpoint.get(RANDOM_KEY)

    def before_train_epoch(self, runner) -> None:
        pending, self._pending = self._pending, None
        if pending is not None and runner.iter > 0:
            self.set_state(pending)

    def before_val(self, runner) -> None:
        self._before_val = self.get_state()

    def after_val(self, runner) -> None:
        if self._before_val is not None:
            self.set_state(self._before_val)
            self._before_val = None


@HOOKS.register_module()
class DeferredLogHook(Hook):
    """Reads the logged values that are not losses (diagnostics, ``acc``) once
    per log interval, not every iteration.

    It runs before MMEngine's ``RuntimeInfoHook`` (which calls ``.item()`` on
    each, a wait for the GPU) and keeps them on the device; when the
    ``LoggerHook`` logs, before a checkpoint and after training it reads them
    in one read per device and gives each iteration's values to the message hub
    in order: the same logs.

    Args:
        interval (int, optional): Iterations between reads. Defaults to None:
            the ``LoggerHook``'s interval.
    """

    priority = 'HIGHEST'  # before RuntimeInfoHook (VERY_HIGH) reads them

    def __init__(self, interval: Optional[int] = None) -> None:
        self.interval = interval
        self._kept: List[Dict[str, torch.Tensor]] = []

    def _interval(self, runner) -> int:
        if self.interval is None:
            self.interval = next((hook.interval for hook in runner.hooks
                                  if isinstance(hook, LoggerHook)), 50)
        return self.interval

    def after_train_iter(self,
                         runner,
                         batch_idx: int,
                         data_batch=None,
                         outputs: Optional[dict] = None) -> None:
        if outputs:
            self._kept.append({
                key: outputs.pop(key).detach()
                for key in list(outputs)
                if 'loss' not in key and isinstance(outputs[key],
                                                    torch.Tensor)
            })
        if self.every_n_inner_iters(batch_idx, self._interval(runner)) or \
                self.end_of_epoch(runner.train_dataloader, batch_idx):
            self.flush(runner)

    def flush(self, runner) -> None:
        """Give the kept values to the message hub (one read per
        device)."""
        kept, self._kept = self._kept, []
        values = [value for step in kept for value in step.values()]
        read = {}
        for device in {value.device for value in values}:
            on = [i for i, value in enumerate(values)
                  if value.device == device]
            read.update(zip(on, torch.stack(
                [values[i].reshape(()) for i in on]).tolist()))
        index = iter(range(len(values)))
        for step in kept:
            for key in step:
                runner.message_hub.update_scalar(f'train/{key}',
                                                 read[next(index)])

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        if self._kept:  # the message hub was saved before this hook
            self.flush(runner)
            checkpoint['message_hub'] = apply_to(
                runner.message_hub.state_dict(), lambda x: hasattr(x, 'cpu'),
                lambda x: x.cpu())

    def after_train(self, runner) -> None:
        self.flush(runner)

