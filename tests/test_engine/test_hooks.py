"""RankLossMemoryHook and RandomStateHook through MMEngine's Runner.

A small model whose loss ranks nothing but, like the AP loss, depends on a
memory of earlier batches, and whose step draws from torch, numpy and
Python's generators (dropout, data jitter, a random skip): resuming after
epoch 2 of 4 must give bitwise the weights and the losses of the
uninterrupted run, and does not without the hooks.
"""
import copy
import random
import sys
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


# ------------------------------------------------ aLRP self-balance hook
# ALRPSelfBalanceHook on an iteration period (the authors' schedule): the
# unit tests drive the hook with a stand-in runner and put the per-iteration
# sums into the loss's buffer themselves (what ALRPLoss does in training),
# so they test the schedule, not the loss; one test trains a real ALRPLoss
# through MMEngine's Runner and resumes it.
import logging  # noqa: E402
from types import SimpleNamespace  # noqa: E402

from mmengine.optim.scheduler import LinearLR, MultiStepLR  # noqa: E402

from mmdet.registry import HOOKS as MMDET_HOOKS  # noqa: E402
from mmdet_rankloss.losses import ALRPLoss  # noqa: E402
from mmdet_rankloss.losses.alrp_loss import (  # noqa: E402
    ALRPSelfBalanceHook, default_sb_period, warmup_end)

# the module (the package's ``alrp_loss`` is the function of that name)
alrp_module = sys.modules[ALRPSelfBalanceHook.__module__]

# as tools/train.py runs them: checkpoint loading, the head-fit check
pytestmark = pytest.mark.usefixtures('mmengine_patches')


def _optimizer():
    return torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.01)


def _warmup(end, by_epoch=False):
    return LinearLR(_optimizer(), start_factor=0.001, by_epoch=by_epoch,
                    begin=0, end=end)


def sb_runner(max_iters, schedulers=None, epoch_length=None, losses=1):
    model = nn.Sequential(*[ALRPLoss().train() for _ in range(losses)])
    return SimpleNamespace(
        model=model, max_iters=max_iters, param_schedulers=schedulers,
        iter=0, logger=logging.getLogger('test_sb'),
        train_dataloader=range(epoch_length) if epoch_length else None)


def run_iters(hook, runner, sums, start=0):
    """Iterations ``start, start + 1, ...``: ``sums[k]`` is what the loss
    accumulated in the k-th (a pair, or None for no positives); returns the
    SB weight after each."""
    loss = runner.model[0]
    weights = []
    for k, pair in enumerate(sums):
        runner.iter = start + k
        if pair is not None:
            loss._sb_sums += torch.tensor(pair, dtype=torch.float64)
        hook.after_train_iter(runner, k)
        weights.append(float(loss.sb_weight))
    return weights


def changes(weights, start=0, previous=50.0):
    """1-based iteration counts after which the weight changed."""
    out = []
    for k, weight in enumerate(weights):
        if weight != previous:
            out.append(start + k + 1)
        previous = weight
    return out


def test_sb_default_schedule_follows_the_warmup():
    # DigitsVOC: 16 epochs x 48 iterations, LinearLR warm-up 100 iterations
    steps = MultiStepLR(_optimizer(), milestones=[12, 15], by_epoch=True)
    runner = sb_runner(768, [_warmup(100), steps], epoch_length=48)
    assert ALRPSelfBalanceHook().resolve(runner) == (100, 83)
    # COCO at batch 16: 12 epochs of 7,330, MMDetection's 500-iteration
    # warm-up: the authors' period
    runner = sb_runner(7330 * 12, [_warmup(500)], epoch_length=7330)
    assert ALRPSelfBalanceHook().resolve(runner) == (500, 3665)
    assert default_sb_period(7330 * 12, 500) == 3665
    assert default_sb_period(768, 100) == 83
    # no warm-up: from iteration 0; explicit values win
    assert ALRPSelfBalanceHook().resolve(sb_runner(800)) == (0, 100)
    assert ALRPSelfBalanceHook(period=7, begin=3).resolve(
        sb_runner(768, [_warmup(100)])) == (3, 7)
    assert default_sb_period(10, 10) == 1


def test_sb_warmup_end_reads_the_schedulers():
    # an epoch-based warm-up counts in epochs
    assert warmup_end([_warmup(2, by_epoch=True)], 768, 48) == 96
    # converted to iterations by MMEngine: already in iterations
    converted = LinearLR.build_iter_from_epoch(
        _optimizer(), start_factor=0.001, begin=0, end=2, by_epoch=True,
        epoch_length=48)
    assert warmup_end([converted], 768, 48) == 96
    # a decay (factor falls) is no warm-up; an open end stops at max_iters
    decay = LinearLR(_optimizer(), start_factor=1.0, end_factor=0.1,
                     by_epoch=False, begin=0, end=300)
    assert warmup_end([decay], 768) == 0
    assert warmup_end([_warmup(10**9)], 768) == 768
    # one list per optimizer
    assert warmup_end(dict(a=[_warmup(50)], b=[_warmup(70)]), 768) == 70
    assert warmup_end(None, 768) == 0
    with pytest.raises(ValueError, match='epoch length'):
        warmup_end([_warmup(2, by_epoch=True)], 768)


def test_sb_no_update_during_warmup_then_every_period():
    runner = sb_runner(100, [_warmup(10)])
    hook = ALRPSelfBalanceHook(period=5)
    hook.before_train(runner)
    # warm-up: huge ratios (tiny L_loc), never measured
    sums = [(1.0, 1e-4)] * 10 + [(3.0, 1.0)] * 5 + [(5.0, 1.0)] * 5
    weights = run_iters(hook, runner, sums)
    assert changes(weights) == [15, 20]  # begin + period, begin + 2 period
    assert weights[9] == 50.0  # the initial weight through the warm-up
    assert weights[14] == pytest.approx(3.0)
    assert weights[19] == pytest.approx(5.0)
    # the loss's own sums are taken every iteration
    assert not runner.model[0]._sb_sums.any()


def test_sb_weight_is_the_ratio_of_the_period_sums():
    runner = sb_runner(100)
    hook = ALRPSelfBalanceHook(period=3, begin=0)
    hook.before_train(runner)
    sums = [(1.0, 0.5), (4.0, 0.25), (2.0, 0.25)]
    weights = run_iters(hook, runner, sums)
    assert weights[-1] == pytest.approx(7.0 / 1.0)
    assert weights[:2] == [50.0, 50.0]


def test_sb_iterations_without_positives_do_not_count():
    runner = sb_runner(100)
    hook = ALRPSelfBalanceHook(period=3, begin=2)
    hook.before_train(runner)
    sums = [(9.0, 1.0), (9.0, 1.0),  # before begin
            (2.0, 1.0), None, None, (2.0, 1.0), None, (2.0, 1.0),
            (4.0, 1.0), (4.0, 1.0), (4.0, 1.0)]
    weights = run_iters(hook, runner, sums)
    assert changes(weights) == [8, 11]
    assert weights[7] == pytest.approx(2.0)
    assert weights[10] == pytest.approx(4.0)


def test_sb_under_ddp_every_process_counts_the_same(monkeypatch):
    """Two processes (the other one simulated by the all-reduce): an
    iteration in which only the other process had positives counts here
    too, and its sums enter the weight."""
    other = {}

    def all_reduce(tensor, op='sum'):
        assert op == 'sum'
        tensor += other['rows']

    monkeypatch.setattr(alrp_module, 'get_dist_info', lambda: (0, 2))
    monkeypatch.setattr(alrp_module, 'all_reduce', all_reduce)
    runner = sb_runner(100)
    hook = ALRPSelfBalanceHook(period=2, begin=0)
    hook.before_train(runner)
    loss = runner.model[0]
    for it, (mine, theirs) in enumerate([(None, (3.0, 1.0)),
                                         ((5.0, 1.0), None)]):
        runner.iter = it
        if mine is not None:
            loss._sb_sums += torch.tensor(mine, dtype=torch.float64)
        other['rows'] = torch.tensor(
            [[*theirs, 1.0] if theirs else [0.0, 0.0, 0.0]],
            dtype=torch.float64)
        hook.after_train_iter(runner, it)
    assert float(loss.sb_weight) == pytest.approx(8.0 / 2.0)


def test_sb_every_alrp_loss_of_the_model_is_updated():
    runner = sb_runner(100, losses=2)
    hook = ALRPSelfBalanceHook(period=1, begin=0)
    hook.before_train(runner)
    runner.model[0]._sb_sums += torch.tensor([3.0, 1.0], dtype=torch.float64)
    runner.model[1]._sb_sums += torch.tensor([6.0, 1.0], dtype=torch.float64)
    hook.after_train_iter(runner, 0)
    assert float(runner.model[0].sb_weight) == pytest.approx(3.0)
    assert float(runner.model[1].sb_weight) == pytest.approx(6.0)


def test_sb_self_balance_false_keeps_the_weight():
    runner = sb_runner(100)
    runner.model[0].self_balance = False
    hook = ALRPSelfBalanceHook(period=1, begin=0)
    run_iters(hook, runner, [(3.0, 1.0)] * 3)
    assert float(runner.model[0].sb_weight) == 50.0


def test_sb_epoch_period_is_the_earlier_behaviour():
    """``period='epoch'``: every iteration of the epoch, warm-up included,
    and one update after the epoch."""
    runner = sb_runner(100, [_warmup(10)])
    hook = ALRPSelfBalanceHook(period='epoch')
    hook.before_train(runner)
    weights = run_iters(hook, runner, [(1.0, 1e-3), (3.0, 1.0)])
    assert weights == [50.0, 50.0]  # nothing within the epoch
    hook.after_train_epoch(runner)
    assert float(runner.model[0].sb_weight) == pytest.approx(4.0 / 1.001)
    assert not runner.model[0]._sb_sums.any()


@pytest.mark.parametrize('kwargs, match', [
    (dict(period=0), 'period must be an int >= 1'),
    (dict(period=2.5), 'period must be an int >= 1'),
    (dict(begin=-1), 'begin must be an int >= 0'),
    (dict(period='epoch', begin=3), "begin must be None with period='epoch'"),
])
def test_sb_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ALRPSelfBalanceHook(**kwargs)


def test_sb_hook_is_registered():
    hook = MMDET_HOOKS.build(dict(type='ALRPSelfBalanceHook', period=4))
    assert isinstance(hook, ALRPSelfBalanceHook) and hook.period == 4


class ALRPToyModel(BaseModel):
    """A linear classifier of 3 classes (plus the unused background
    column) over 12 anchors per sample, trained by a real ALRPLoss with the
    localisation errors of a second output."""

    def __init__(self) -> None:
        super().__init__()
        self.cls = nn.Linear(4, 4)
        self.loc = nn.Linear(4, 1)
        self.loss_cls = ALRPLoss(log_diagnostics=True)

    def forward(self, inputs, targets, mode='tensor'):
        feats = inputs.reshape(-1, 4)
        scores = self.cls(feats)
        if mode != 'loss':
            return scores
        labels = targets.reshape(-1)
        loc_error = self.loc(feats).squeeze(1).sigmoid()
        out = self.loss_cls(scores, labels, loc_error=loc_error)
        return dict(loss_alrp_cls=out['loss_alrp_cls'],
                    loss_alrp_loc=out['loss_alrp_loc'])


class ALRPToyDataset(torch.utils.data.Dataset):

    def __init__(self) -> None:
        gen = torch.Generator().manual_seed(2)
        self.x = torch.randn(24, 12, 4, generator=gen)
        self.y = torch.randint(0, 3, (24, 12), generator=gen)
        self.y[torch.rand(24, 12, generator=gen) < 0.7] = 3  # background
        self.y[8:12] = 3  # batch 2 of every epoch: no positives

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return dict(inputs=self.x[i], targets=self.y[i])


class SBRecorder(Hook):
    priority = 'LOW'  # after ALRPSelfBalanceHook

    def __init__(self) -> None:
        self.weights = []

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None):
        self.weights.append(float(runner.model.loss_cls.sb_weight))


def make_alrp_runner(work_dir, max_epochs, resume=False):
    recorder = SBRecorder()
    torch.manual_seed(0)
    runner = Runner(
        model=ALRPToyModel(),
        work_dir=str(work_dir),
        experiment_name=f'alrp_{work_dir.name}_{max_epochs}_{resume}',
        train_dataloader=dict(
            dataset=ALRPToyDataset(),
            sampler=dict(type='DefaultSampler', shuffle=False),
            batch_size=4,
            num_workers=0,
            collate_fn=dict(type='default_collate')),
        optim_wrapper=dict(optimizer=dict(type='SGD', lr=0.05)),
        param_scheduler=[dict(type='LinearLR', start_factor=0.1,
                              by_epoch=False, begin=0, end=5)],
        train_cfg=dict(by_epoch=True, max_epochs=max_epochs),
        default_hooks=dict(
            checkpoint=dict(type='CheckpointHook', interval=1),
            logger=dict(type='LoggerHook', interval=1)),
        custom_hooks=[dict(type='ALRPSelfBalanceHook', period=4), recorder],
        randomness=dict(seed=0),
        resume=resume,
        default_scope='mmdet')
    return runner, recorder


def test_sb_schedule_through_the_runner_and_exact_resume(tmp_path):
    """6 iterations per epoch (the third without positives), warm-up 5,
    period 4: an epoch-end checkpoint falls inside a period; the resumed
    run updates at the same iterations with the same weights as the
    uninterrupted one."""
    straight, rec_straight = make_alrp_runner(tmp_path / 'straight', 4)
    straight.train()
    w = rec_straight.weights
    assert len(w) == 24 and w[:9] == [50.0] * 9
    # measured from iteration 6 (1-based); 9, 15 and 21 have no positives:
    # counted 6 7 8 10 | 11 12 13 14 | 16 17 18 19 | 20 22 23 24
    assert changes(w) == [10, 14, 19, 24]
    first, rec_first = make_alrp_runner(tmp_path / 'resumed', 2)
    first.train()
    second, rec_second = make_alrp_runner(tmp_path / 'resumed', 4,
                                          resume=True)
    second.train()
    assert rec_first.weights + rec_second.weights == w
    assert float(second.model.loss_cls.sb_weight) == w[-1]
    ckpt = torch.load(str(tmp_path / 'resumed' / 'epoch_2.pth'),
                      map_location='cpu', weights_only=False)
    state = ckpt['alrp_self_balance']
    assert (state['begin'], state['period']) == (5, 4)
    assert state['modules']['loss_cls']['count'] == 2  # iterations 11, 12
    assert state['modules']['loss_cls']['sums'].dtype == torch.float64
    part = str(tmp_path / 'sb.pth')
    torch.save(state, part)
    torch.load(part, weights_only=True)  # plain tensors and ints


def test_sb_resume_without_the_state_restarts_the_period(tmp_path,
                                                         monkeypatch):
    first, rec_first = make_alrp_runner(tmp_path, 2)
    first.train()
    path = tmp_path / 'epoch_2.pth'
    ckpt = torch.load(str(path), map_location='cpu', weights_only=False)
    del ckpt['alrp_self_balance']
    torch.save(ckpt, str(path))
    seen = []
    monkeypatch.setattr(alrp_module, 'print_log',
                        lambda message, **kwargs: seen.append(message))
    runner, rec = make_alrp_runner(tmp_path, 4, resume=True)
    runner.train()
    assert any("has no 'alrp_self_balance'" in m for m in seen), seen
    # the period restarts at iteration 13: 13 14 16 17 -> an update after
    # 17, not after 14 as in the uninterrupted run
    assert changes(rec.weights, start=12,
                   previous=rec_first.weights[-1])[0] == 17
