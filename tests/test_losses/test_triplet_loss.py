"""Tests of the batch-hard triplet and Wilcoxon-BH baselines (brute force)."""
import math

import pytest
import torch
import torch.nn.functional as F

from mmdet_rankloss.losses.triplet_loss import (batch_hard_triplet_loss,
                                                wilcoxon_loss)


def brute_hardest(x, y, metric):
    """Per anchor with both: (hardest positive, hardest negative) values."""
    v = x.tolist()
    out = []
    for i in range(len(v)):
        vals = [(metric(v[i], v[j]), y[j] == y[i]) for j in range(len(v))
                if j != i]
        pos = [m for m, same in vals if same]
        neg = [m for m, same in vals if not same]
        if pos and neg:
            out.append((pos, neg))
    return out


def euclid(a, b):
    return math.sqrt(sum((p - q)**2 for p, q in zip(a, b)))


def cosine(a, b):
    return sum(p * q for p, q in zip(a, b))


@pytest.mark.parametrize('b, c', [(12, 3), (10, 5), (16, 2)])
@pytest.mark.parametrize('soft_margin', [False, True])
def test_triplet_matches_brute_force(b, c, soft_margin, batch):
    x, y = batch(b, c, seed=b + c)
    y = y.tolist()
    losses = []
    for pos, neg in brute_hardest(x, y, euclid):
        gap = max(pos) - min(neg)
        losses.append(math.log1p(math.exp(gap)) if soft_margin else max(
            0.0, 0.3 + gap))
    ours = batch_hard_triplet_loss(x, torch.tensor(y), 0.3, soft_margin)
    assert ours.item() == pytest.approx(sum(losses) / len(losses), abs=1e-10)


@pytest.mark.parametrize('slope', [1.0, 5.0])
def test_wilcoxon_matches_eq11_brute_force(slope, batch):
    x, y = batch(12, 3, seed=1)
    hard = brute_hardest(x, y.tolist(), cosine)
    f_pos = [min(p) for p, _ in hard]
    f_neg = [max(n) for _, n in hard]
    n = len(hard)
    expected = 1 - sum(1 / (1 + math.exp(-slope * (p - q))) for p in f_pos
                       for q in f_neg) / n**2
    assert wilcoxon_loss(x, y, slope).item() == pytest.approx(
        expected, abs=1e-10)


def test_hardest_pairs_drive_the_gradient():
    # only the farthest positive and the closest negative of each anchor
    # (and the anchor) get a triplet gradient
    x = F.normalize(torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.2, 1.0],
                                  [-1.0, 0.1], [0.8, -0.5]]), dim=1)
    y = torch.tensor([0, 0, 0, 1, 1])
    x0 = x.clone().requires_grad_(True)
    loss = batch_hard_triplet_loss(x0, y, margin=10.0)  # every hinge active
    loss.backward()
    d = torch.cdist(x, x)
    touched = set()
    for a in range(5):
        pos = [j for j in range(5) if j != a and y[j] == y[a]]
        neg = [j for j in range(5) if y[j] != y[a]]
        touched |= {a, max(pos, key=lambda j: d[a, j]),
                    min(neg, key=lambda j: d[a, j])}
    moved = {i for i in range(5) if x0.grad[i].abs().sum() > 0}
    assert moved == touched


def test_separated_classes():
    x = torch.tensor([[1.0, 0.0]] * 2 + [[-1.0, 0.0]] * 2)
    y = torch.tensor([0, 0, 1, 1])
    assert batch_hard_triplet_loss(x, y).item() == 0.0  # d_ap 0, d_an 2
    assert wilcoxon_loss(x, y).item() == pytest.approx(
        1 - 1 / (1 + math.exp(-2.0)))


def test_gradcheck_float64(batch):
    x, y = batch(9, 3, d=4, seed=2)
    x.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda v: batch_hard_triplet_loss(F.normalize(v, dim=1), y, 0.5),
        (x, ))
    assert torch.autograd.gradcheck(
        lambda v: wilcoxon_loss(F.normalize(v, dim=1), y, 2.0), (x, ))


@pytest.mark.parametrize('fn', [batch_hard_triplet_loss, wilcoxon_loss])
def test_no_valid_anchor_gives_zero_with_graph(fn, batch):
    x, _ = batch(5, 2)
    x.requires_grad_(True)
    for y in (torch.arange(5), torch.zeros(5, dtype=torch.long)):
        loss = fn(x, y)
        loss.backward()
        assert loss.item() == 0.0
    assert fn(torch.zeros(0, 3), torch.zeros(0, dtype=torch.long)).item() == 0
