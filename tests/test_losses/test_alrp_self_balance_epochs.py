"""``ALRPSelfBalanceHook(period_epochs=...)``: the self-balance period in
epochs of images, whatever the batch. The period is checked against the
epoch length worked out by hand (``ceil(images / batch)``), the updates
against the iterations they must follow, and bad arguments against their
messages. The hook is driven with a stand-in runner, the loss's sums put
into its buffer by hand (what ``ALRPLoss`` does in training)."""
import logging
import math
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn
from torch.utils.data import DataLoader

from mmdet.registry import HOOKS
from mmdet_rankloss.losses import ALRPLoss
from mmdet_rankloss.losses.alrp_loss import (AUTHORS_SB_PERIOD,
                                             ALRPSelfBalanceHook)

#: COCO train2017 images with at least one box (MMDetection's
#: ``filter_empty_gt``), the aLRP authors' training set
COCO_TRAIN_IMAGES = 117266


def runner(images, batch, epochs=2):
    """A stand-in runner: one ALRPLoss, a real DataLoader of ``images``
    items at ``batch``."""
    loader = DataLoader(range(images), batch_size=batch)
    return SimpleNamespace(
        model=nn.Sequential(ALRPLoss().train()), iter=0,
        max_iters=epochs * len(loader), param_schedulers=None,
        logger=logging.getLogger('test_sb_epochs'), train_dataloader=loader)


@pytest.mark.parametrize('batch', [32, 16, 8])
def test_one_epoch_is_the_data_loaders_length(batch):
    hook = ALRPSelfBalanceHook(period_epochs=1, begin=0)
    period = hook.resolve(runner(COCO_TRAIN_IMAGES, batch))[1]
    assert period == math.ceil(COCO_TRAIN_IMAGES / batch)


def test_the_authors_period_is_one_epoch_at_their_batch():
    """Their 3,665 iterations at 4 GPUs x 8 images: one epoch (one process
    of 4 loads a quarter of the images, 8 at a time)."""
    assert math.ceil(COCO_TRAIN_IMAGES / 32) == AUTHORS_SB_PERIOD
    one_process = runner(math.ceil(COCO_TRAIN_IMAGES / 4), 8)
    assert ALRPSelfBalanceHook(period_epochs=1).resolve(one_process)[1] == \
        AUTHORS_SB_PERIOD
    # the iteration default at batch 16 is half an epoch
    assert ALRPSelfBalanceHook().resolve(runner(COCO_TRAIN_IMAGES, 16,
                                                epochs=12)) == (0, 3665)


@pytest.mark.parametrize('epochs, period', [(0.5, 5), (2, 20), (0.04, 1)])
def test_fractions_and_multiples_of_an_epoch(epochs, period):
    # 40 images at batch 4: 10 iterations an epoch; at least 1
    hook = ALRPSelfBalanceHook(period_epochs=epochs, begin=0)
    assert hook.resolve(runner(40, 4, epochs=4))[1] == period


def test_updates_follow_each_epoch_after_begin():
    """10 iterations an epoch, measured from iteration 3: updates after
    iterations 13 and 23 (1-based), each the ratio of its period's sums."""
    run = runner(40, 4, epochs=3)
    hook = ALRPSelfBalanceHook(period_epochs=1, begin=3)
    hook.before_train(run)
    loss = run.model[0]
    changed, previous = [], float(loss.sb_weight)
    for it in range(30):
        run.iter = it
        pair = (4.0, 1.0) if it < 13 else (9.0, 3.0)
        loss._sb_sums += torch.tensor(pair, dtype=torch.float64)
        hook.after_train_iter(run, it)
        if float(loss.sb_weight) != previous:
            changed.append((it + 1, float(loss.sb_weight)))
            previous = float(loss.sb_weight)
    assert changed == [(13, pytest.approx(4.0)), (23, pytest.approx(3.0))]


@pytest.mark.parametrize('kwargs, match', [
    (dict(period_epochs=0), 'period_epochs must be a finite number > 0'),
    (dict(period_epochs=-1.0), 'period_epochs must be a finite number > 0'),
    (dict(period_epochs='1'), 'period_epochs must be a finite number'),
    (dict(period_epochs=float('inf')), 'period_epochs must be a finite'),
    (dict(period_epochs=1, period=100),
     'period must be None when period_epochs is given'),
    (dict(period_epochs=1, period='epoch'),
     'period must be None when period_epochs is given'),
])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ALRPSelfBalanceHook(**kwargs)


def test_no_epoch_length_is_refused():
    run = runner(40, 4)
    run.train_dataloader = None
    with pytest.raises(ValueError, match='period_epochs=1.0 needs the epoch '
                       'length'):
        ALRPSelfBalanceHook(period_epochs=1, begin=0).resolve(run)


def test_built_from_a_config():
    hook = HOOKS.build(dict(type='ALRPSelfBalanceHook', period_epochs=1,
                            begin=0))
    assert (hook.period, hook.period_epochs, hook.begin) == (None, 1.0, 0)
