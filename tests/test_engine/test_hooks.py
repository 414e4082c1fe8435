"""RankLossMemoryHook and RandomStateHook through MMEngine's Runner.

A small model whose loss ranks nothing but, like the AP loss, depends on a
memory of earlier batches, and whose step draws from torch, numpy and
Python's generators (dropout, data jitter, a random skip): resuming after
epoch 2 of 4 must give bitwise the weights and the losses of the
uninterrupted run, and does not without the hooks.
"""
import copy
import random
from collections import deque

import numpy as np
import pytest
import torch
import torch.nn as nn
from mmengine.hooks import Hook
from mmengine.model import BaseModel
from mmengine.runner import Runner

import mmdet_rankloss  # noqa: F401  (registers the hooks)
from mmdet_rankloss.engine.hooks import (RandomStateHook,
                                         RankLossMemoryHook, memory_modules)
from mmdet_rankloss.utils import checkpoint_globals


class MemoryLoss(nn.Module):
    """A loss that compares the batch with the last ``size`` batches, kept
    as a plain deque like the AP loss's memory."""

    def __init__(self, size: int = 3) -> None:
        super().__init__()
        self._memory = deque(maxlen=size)

    def forward(self, pred):
        loss = pred.pow(2).mean()
        if self._memory:
            loss = loss + (pred.mean() - torch.cat(list(
                self._memory)).mean()).pow(2)
        if self.training:
            self._memory.append(pred.detach())
        return loss

    def memory_state_dict(self):
        return dict(batches=list(self._memory))

    def load_memory_state_dict(self, state):
        self._memory.clear()
        self._memory.extend(state['batches'])


class ToyModel(BaseModel):

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.drop = nn.Dropout(0.5)
        self.loss_cls = MemoryLoss()

    def forward(self, inputs, targets, mode='tensor'):
        pred = self.fc(self.drop(inputs))
        if mode == 'loss':
            # a random skip of the target term, as RoI sampling would
            scale = 1.0 if random.random() < 0.7 else 0.5
            return dict(
                loss=self.loss_cls(pred) +
                scale * (pred - targets).pow(2).mean())
        return pred


class ToyDataset(torch.utils.data.Dataset):
    """Random inputs with numpy jitter drawn at load time (augmentation)."""

    def __init__(self) -> None:
        gen = torch.Generator().manual_seed(1)
        self.x = torch.randn(24, 4, generator=gen)
        self.y = torch.randn(24, 2, generator=gen)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        jitter = torch.from_numpy(np.random.normal(size=4).astype(
            np.float32)) * 0.1
        return dict(inputs=self.x[i] + jitter, targets=self.y[i])


class LossRecorder(Hook):
    """Every training loss, as the model returned it."""

    def __init__(self) -> None:
        self.losses = []

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None):
        self.losses.append(outputs['loss'].item())


def make_runner(work_dir, max_epochs, hooks, resume=False, name='run'):
    recorder = LossRecorder()
    torch.manual_seed(0)  # the same initial weights in every run
    runner = Runner(
        model=ToyModel(),
        work_dir=str(work_dir),
        experiment_name=f'{name}_{work_dir.name}_{max_epochs}_{resume}',
        train_dataloader=dict(
            dataset=ToyDataset(),
            sampler=dict(type='DefaultSampler', shuffle=True),
            batch_size=4,
            num_workers=0,
            collate_fn=dict(type='default_collate')),
        optim_wrapper=dict(
            optimizer=dict(type='SGD', lr=0.02, momentum=0.9)),
        train_cfg=dict(by_epoch=True, max_epochs=max_epochs),
        default_hooks=dict(
            checkpoint=dict(type='CheckpointHook', interval=1),
            logger=dict(type='LoggerHook', interval=1)),
        custom_hooks=[copy.deepcopy(h) for h in hooks] + [recorder],
        randomness=dict(seed=0),
        resume=resume,
        default_scope='mmdet')
    return runner, recorder


HOOKS = [dict(type='RankLossMemoryHook'), dict(type='RandomStateHook')]


def train_straight_and_resumed(tmp_path, hooks):
    straight, rec_straight = make_runner(tmp_path / 'straight', 4, hooks)
    straight.train()
    first, rec_first = make_runner(tmp_path / 'resumed', 2, hooks)
    first.train()
    second, rec_second = make_runner(
        tmp_path / 'resumed', 4, hooks, resume=True)
    second.train()
    return (straight.model.state_dict(), rec_straight.losses,
            second.model.state_dict(), rec_first.losses + rec_second.losses)


def test_resume_is_bitwise_exact(tmp_path):
    w_straight, l_straight, w_resumed, l_resumed = \
        train_straight_and_resumed(tmp_path, HOOKS)
    assert len(l_straight) == len(l_resumed) == 24
    assert l_straight == l_resumed
    for key, value in w_straight.items():
        assert torch.equal(value, w_resumed[key]), key


@pytest.mark.parametrize('missing', ['RankLossMemoryHook', 'RandomStateHook'])
def test_resume_differs_without_each_hook(tmp_path, missing):
    """Each hook is needed: without it the run after the resume differs."""
    hooks = [h for h in HOOKS if h['type'] != missing]
    _, l_straight, _, l_resumed = train_straight_and_resumed(tmp_path, hooks)
    assert l_straight[:12] == l_resumed[:12]
    assert l_straight[12] != l_resumed[12]


def test_checkpoint_holds_plain_tensors(tmp_path):
    runner, _ = make_runner(tmp_path, 1, HOOKS)
    runner.train()
    path = str(tmp_path / 'epoch_1.pth')
    with torch.serialization.safe_globals(checkpoint_globals()):
        ckpt = torch.load(path, map_location='cpu', weights_only=True)
    # our parts alone need no allow-list at all
    for key in ('rank_loss_memory', 'random_state'):
        part = str(tmp_path / f'{key}.pth')
        torch.save(ckpt[key], part)
        torch.load(part, weights_only=True)
    memory = ckpt['rank_loss_memory']
    assert memory['world_size'] == 1
    assert list(memory['modules']) == ['loss_cls']
    [state] = memory['modules']['loss_cls']
    assert len(state['batches']) == 3  # the deque's maxlen
    assert torch.equal(state['batches'][-1],
                       runner.model.loss_cls._memory[-1])


def test_load_from_starts_with_empty_memory(tmp_path):
    """``load_from`` (fine-tuning) is a new run: weights, no memory."""
    runner, _ = make_runner(tmp_path / 'a', 1, HOOKS)
    runner.train()
    hook = RankLossMemoryHook()
    model = ToyModel()
    hook.after_load_checkpoint(
        None, torch.load(str(tmp_path / 'a' / 'epoch_1.pth'),
                         weights_only=False))

    class NewRun:
        iter = 0

    NewRun.model = model
    hook.before_train(NewRun)
    assert len(model.loss_cls._memory) == 0


def test_resume_checks_the_memory_modules(tmp_path):
    hook = RankLossMemoryHook()
    hook.after_load_checkpoint(
        None,
        dict(rank_loss_memory=dict(
            world_size=1, modules={'roi_head.loss_cls': [{}]})))

    class Resumed:
        iter = 10
        model = ToyModel()

    with pytest.raises(KeyError, match=r"roi_head\.loss_cls.*loss_cls"):
        hook.before_train(Resumed)


def test_memory_modules_finds_losses_with_both_methods():
    model = ToyModel()
    assert list(memory_modules(model)) == ['loss_cls']
    assert memory_modules(nn.Sequential(nn.Linear(1, 1))) == {}


def test_random_state_round_trip():
    state = RandomStateHook.get_state()
    expected = (torch.rand(3), np.random.rand(3), random.random())
    torch.rand(5), np.random.rand(5), random.random()
    RandomStateHook.set_state(state)
    again = (torch.rand(3), np.random.rand(3), random.random())
    assert torch.equal(expected[0], again[0])
    assert np.array_equal(expected[1], again[1])
    assert expected[2] == again[2]


def logged_warnings(fn):
    """Messages that ``fn()`` logs through MMEngine's current logger."""
    import logging
    from mmengine.logging import MMLogger
    seen = []

    class Handler(logging.Handler):

        def emit(self, record):
            seen.append(record.getMessage())

    logger = MMLogger.get_current_instance()
    handler = Handler(level=logging.WARNING)
    logger.addHandler(handler)
    try:
        fn()
    finally:
        logger.removeHandler(handler)
    return seen


def resumed_runner(model):

    class Resumed:
        iter = 10

    Resumed.model = model
    return Resumed


def test_resume_without_saved_memory_warns():
    hook = RankLossMemoryHook()
    hook.after_load_checkpoint(None, dict(state_dict={}))
    model = ToyModel()
    seen = logged_warnings(lambda: hook.before_train(resumed_runner(model)))
    assert any("has no 'rank_loss_memory'" in m and "['loss_cls']" in m
               for m in seen), seen
    assert len(model.loss_cls._memory) == 0


def test_resume_with_another_world_size_takes_rank_0():
    hook = RankLossMemoryHook()
    states = [dict(batches=[torch.ones(2, 2)]),
              dict(batches=[torch.zeros(2, 2)])]
    hook.after_load_checkpoint(
        None,
        dict(rank_loss_memory=dict(world_size=2,
                                   modules={'loss_cls': states})))
    model = ToyModel()
    seen = logged_warnings(lambda: hook.before_train(resumed_runner(model)))
    assert any('written by 2 processes, this run has 1' in m for m in seen)
    assert torch.equal(model.loss_cls._memory[0], torch.ones(2, 2))
