"""Tests of the Soft Ranking Threshold loss: thresholds, limits, margins."""
import math

import pytest
import torch
import torch.nn.functional as F
from mmengine.logging import MessageHub

from mmdet.registry import MODELS
from mmdet_rankloss.losses.srt_loss import (SoftRankThresholdLoss,
                                            soft_rank_threshold_loss,
                                            srt_row_losses)


def sigmoid(z):
    return 1 / (1 + math.exp(-z)) if z > -700 else 0.0


def brute_srt(x, y, alpha=0.5, margin=0.0, soft=False, beta=0.0, t=0.1,
              exact=False):
    """Eq. 1-8 with loops; ``exact`` uses hard ranks (ties: by index)."""
    v, y = x.tolist(), y.tolist()
    b = len(v)
    phi = (lambda z: math.log1p(math.exp(z))) if soft else (
        lambda z: max(0.0, z))
    losses = []
    for i in range(b):
        d = [0.0 if j == i else math.dist(v[i], v[j]) for j in range(b)]
        if exact:
            r = [1 + sum(1 for k in range(b)
                         if d[k] < d[j] or (d[k] == d[j] and k < j))
                 for j in range(b)]
        else:
            r = [1 + sum(sigmoid((d[j] - d[k]) / t) for k in range(b)
                         if k != j) for j in range(b)]
        pos = [j for j in range(b) if j != i and y[j] == y[i]]
        neg = [j for j in range(b) if y[j] != y[i]]
        if not pos or not neg:
            continue
        p, n = len(pos), len(neg)
        loss = alpha * sum(phi(r[j] - (p + 1 - margin)) for j in pos) / p + \
            (1 - alpha) * sum(phi(p + 2 + margin - r[j]) for j in neg) / n
        if beta:
            hard = alpha / p * max(0.0, max(r[j] for j in pos) - p / 2) + \
                (1 - alpha) / n * max(0.0, (b + p + 1) / 2 -
                                      min(r[j] for j in neg))
            loss += beta * hard
        losses.append(loss)
    return sum(losses) / len(losses) if losses else 0.0


@pytest.mark.parametrize('kwargs', [
    dict(),
    dict(alpha=0.3, margin=1.0),
    dict(soft=True),
    dict(beta=0.01),
    dict(alpha=0.7, soft=True, beta=0.5, t=0.5),
])
def test_matches_eq1_to_8_brute_force(kwargs, batch):
    x, y = batch(10, 3, seed=1)
    ours = soft_rank_threshold_loss(
        x, y, kwargs.get('alpha', 0.5), kwargs.get('margin', 0.0),
        kwargs.get('soft', False), kwargs.get('beta', 0.0),
        kwargs.get('t', 0.1))
    assert ours.item() == pytest.approx(brute_srt(x, y, **kwargs), abs=1e-9)


def test_converges_to_the_exact_rank_loss_as_the_sigmoid_sharpens(batch):
    x, y = batch(12, 3, seed=2)
    exact = brute_srt(x, y, beta=0.01, exact=True)
    errors = [abs(soft_rank_threshold_loss(
        x, y, hard_weight=0.01, temperature=t).item() - exact)
        for t in (1.0, 0.01, 1e-4)]
    assert all(a > b for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < 1e-6


def anchor_loss(order, **kwargs):
    """Loss of one anchor whose batch, sorted by distance, has the labels
    ``order`` (1: positive, 0: negative) after the anchor itself."""
    distances = torch.tensor([[0.0] + [0.1 * (k + 1)
                                       for k in range(len(order))]],
                             dtype=torch.float64)
    positives = torch.tensor([[False] + [o == 1 for o in order]])
    negatives = torch.tensor([[False] + [o == 0 for o in order]])
    return srt_row_losses(distances, positives, negatives, temperature=1e-4,
                          **kwargs).item()


def test_thresholds_are_p_plus_1_and_p_plus_2():
    # P = 2 positives: a perfect ranking puts them at ranks 2, 3 and the
    # negatives at >= 4: no loss at all
    assert anchor_loss([1, 1, 0, 0, 0]) == pytest.approx(0.0, abs=1e-9)
    # one negative ahead of the second positive: the positive is at rank 4
    # (T+ = 3 -> 1) and the negative at rank 3 (T- = 4 -> 1)
    expected = 0.5 * (1 / 2) + 0.5 * (1 / 3)
    assert anchor_loss([1, 0, 1, 0, 0]) == pytest.approx(expected, abs=1e-6)
    # the last positive at rank 6: 3 past T+; negatives at 3, 4: 1 + 0
    expected = 0.5 * (3 / 2) + 0.5 * (1 + 0 + 0) / 3
    assert anchor_loss([1, 0, 0, 0, 1]) == pytest.approx(expected, abs=1e-6)


def test_hard_thresholds_are_p_over_2_and_b_plus_p_plus_1_over_2():
    # B = 6, P = 2: T^+ = 1, T^- = 4.5; perfect ranking: hardest positive at
    # rank 3 -> 2 above T^+, hardest negative at rank 4 -> 0.5 below T^-
    only_hard = anchor_loss([1, 1, 0, 0, 0], hard_weight=1.0)
    expected = 0.5 / 2 * (3 - 1) + 0.5 / 3 * (4.5 - 4)
    assert only_hard == pytest.approx(expected, abs=1e-6)
    # hardest = worst positive (rank 6) and best negative (rank 2)
    worst = anchor_loss([0, 1, 0, 0, 1], hard_weight=1.0) - anchor_loss(
        [0, 1, 0, 0, 1])
    assert worst == pytest.approx(0.5 / 2 * (6 - 1) + 0.5 / 3 * (4.5 - 2),
                                  abs=1e-6)


def test_perfect_ranking_vanishes_only_without_margins():
    perfect = [1, 1, 0, 0, 0]
    assert anchor_loss(perfect) == pytest.approx(0.0, abs=1e-9)
    assert anchor_loss(perfect, margin=1.0) > 0.1  # hard margin m = 1
    assert anchor_loss(perfect, soft_margin=True) > 0.1  # softplus


def test_gradcheck_float64(batch):
    x, y = batch(8, 3, d=4, seed=3)
    x.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda v: soft_rank_threshold_loss(F.normalize(v, dim=1), y, 0.4,
                                           0.5, True, 0.2, 0.3), (x, ))


def test_hard_term_waits_for_the_warmup(batch):
    x, y = batch(12, 3, seed=4)
    loss = SoftRankThresholdLoss(hard_weight=1.0, hard_warmup_iters=2)
    basic = soft_rank_threshold_loss(x, y).item()
    full = soft_rank_threshold_loss(x, y, hard_weight=1.0).item()
    assert full > basic
    hub = MessageHub.get_instance('srt_warmup_without_iter')
    assert hub.get_info('iter') is None  # counts training calls
    values = [loss(x, y).item() for _ in range(3)]
    assert values == pytest.approx([basic, basic, full])
    loss.eval()  # evaluation calls do not count
    hub = MessageHub.get_instance('srt_warmup_with_iter')
    hub.update_info('iter', 1)
    assert loss(x, y).item() == pytest.approx(basic)
    hub.update_info('iter', 2)
    assert loss(x, y).item() == pytest.approx(full)


def test_anchors_without_positives_are_skipped_and_empty_is_zero(batch):
    x, y = batch(9, 3, seed=5)
    y[0] = 50
    assert soft_rank_threshold_loss(x, y).item() == pytest.approx(
        brute_srt(x, y), abs=1e-9)
    x.requires_grad_(True)
    loss = soft_rank_threshold_loss(x, torch.arange(9))
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(x.grad, torch.zeros_like(x))


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_half_precision_and_registry(dtype, batch):
    x, y = batch(16, 4, dtype=torch.float32, seed=6)
    xh = x.to(dtype).requires_grad_(True)
    loss = MODELS.build(dict(type='SoftRankThresholdLoss', soft_margin=True,
                             hard_weight=0.01))(xh, y)
    assert loss.dtype == torch.float32 and bool(torch.isfinite(loss))
    loss.backward()
    assert xh.grad.dtype == dtype and bool(torch.isfinite(xh.grad).all())


@pytest.mark.parametrize('kwargs', [dict(alpha=1.5)])
def test_bad_settings_raise(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        SoftRankThresholdLoss(**kwargs)
