"""Tests of the AUC loss: Eq. 10 / Table 1, limit to the exact AUC, mining."""
import pytest
import torch
import torch.nn.functional as F

from mmdet_rankloss.losses.auc_loss import (AUCLoss, auc_loss,
                                            auc_sigmoid_slope, relaxed_auc)

TABLE1 = {0.01: 201.0, 0.02: 101.0, 0.05: 42.2, 0.1: 22.47, 0.2: 12.02}


@pytest.mark.parametrize('delta_s', [0.05, 0.1, 0.2])
def test_eq10_minimiser_reproduces_table1(delta_s):
    # exact second derivative: 42.14, 22.46, 12.02 (table: 42.2, 22.47, 12.02)
    assert auc_sigmoid_slope(delta_s) == pytest.approx(TABLE1[delta_s],
                                                       rel=2e-3)


@pytest.mark.parametrize('delta_s', sorted(TABLE1))
def test_eq10_by_finite_differences_reproduces_all_of_table1(delta_s):
    # 201.35, 100.15, 42.40, 22.50, 12.02: within 1 % of every entry
    r = auc_sigmoid_slope(delta_s, second_derivative='finite_difference')
    assert r == pytest.approx(TABLE1[delta_s], rel=1e-2)


def test_eq10_exact_minimum_is_a_minimum():
    from mmdet_rankloss.losses.auc_loss import _eq10_objective
    r = auc_sigmoid_slope(0.1)
    values = [_eq10_objective(r * f, 0.1, -1.0, 1.0, 'analytic', None)
              for f in (0.97, 1.0, 1.03)]
    assert values[1] < values[0] and values[1] < values[2]


def test_relaxed_auc_converges_to_sklearn_roc_auc():
    metrics = pytest.importorskip('sklearn.metrics')
    g = torch.Generator().manual_seed(0)
    pos = (torch.rand(300, generator=g, dtype=torch.float64) * 1.6 - 0.6)
    neg = (torch.rand(500, generator=g, dtype=torch.float64) * 1.6 - 1.0)
    exact = metrics.roc_auc_score([1] * 300 + [0] * 500,
                                  torch.cat([pos, neg]).numpy())
    settings = [(0.2, None), (0.05, None), (0.01, 400.0), (0.002, 2000.0)]
    errors = [abs(relaxed_auc(pos, neg, ds, r).item() - exact)
              for ds, r in settings]
    assert all(a > b for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < 2e-3, errors


def brute_hardest(x, y):
    sims = (x @ x.t()).tolist()
    pos, neg = [], []
    for i in range(len(y)):
        p = [sims[i][j] for j in range(len(y)) if j != i and y[j] == y[i]]
        n = [sims[i][j] for j in range(len(y)) if y[j] != y[i]]
        if p and n:
            pos.append(min(p))
            neg.append(max(n))
    return torch.tensor(pos, dtype=x.dtype), torch.tensor(neg, dtype=x.dtype)


def test_batch_hard_uses_hardest_positive_and_negative_per_anchor(batch):
    x, y = batch(14, 4, seed=1)
    y[0] = 99  # an anchor without positives is skipped
    pos, neg = brute_hardest(x, y)
    assert 0 < len(pos) < 14
    expected = 1 - relaxed_auc(pos, neg, 0.05)
    torch.testing.assert_close(auc_loss(x, y, 'hard', 0.05), expected)


def test_batch_all_uses_every_pair(batch):
    x, y = batch(10, 3, seed=2)
    sims = x @ x.t()
    same = y[:, None] == y[None, :]
    off = ~torch.eye(10, dtype=torch.bool)
    expected = 1 - relaxed_auc(sims[same & off], sims[~same], 0.1)
    torch.testing.assert_close(auc_loss(x, y, 'all', 0.1), expected)


def test_separated_and_reversed_rankings():
    # positives at similarity 0.5, negatives at -0.5, and the reverse (the
    # sigmoids are then saturated at both ends of [-1, 1])
    pos, neg = torch.full((5, ), 0.5), torch.full((7, ), -0.5)
    assert relaxed_auc(pos, neg).item() == pytest.approx(1.0, abs=1e-3)
    assert relaxed_auc(neg, pos).item() == pytest.approx(0.0, abs=1e-3)


def test_gradcheck_float64(batch):
    x, y = batch(8, 3, d=4, seed=3)
    x.requires_grad_(True)
    for strategy in ('hard', 'all'):
        assert torch.autograd.gradcheck(
            lambda v: auc_loss(F.normalize(v, dim=1), y, strategy, 0.1),
            (x, ))


def test_no_positive_or_no_negative_gives_zero_with_graph(batch):
    x, _ = batch(6, 2, seed=4)
    x.requires_grad_(True)
    for y in (torch.arange(6), torch.zeros(6, dtype=torch.long)):
        for strategy in ('hard', 'all'):
            loss = auc_loss(x, y, strategy)
            loss.backward()
            assert loss.item() == 0.0
    assert torch.equal(x.grad, torch.zeros_like(x))


def test_module_defaults_and_weight(batch):
    loss = AUCLoss()
    assert loss.slope == pytest.approx(auc_sigmoid_slope(0.05))
    x, y = batch(12, 3, seed=6)
    torch.testing.assert_close(
        AUCLoss(loss_weight=3.0, slope=30.0)(x, y),
        3 * auc_loss(x, y, 'hard', 0.05, 30.0))


@pytest.mark.parametrize('kwargs, match', [
    (dict(strategy='semi'), 'strategy'),
    (dict(delta_s=0.03), 'delta_s'),
    (dict(delta_s=-0.1), 'delta_s'),
    (dict(slope=0.0), 'slope'),
    (dict(loss_weight=-1), 'loss_weight'),
])
def test_bad_settings_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        AUCLoss(**kwargs)


def test_bad_inputs_raise(batch):
    with pytest.raises(ValueError, match='non-empty'):
        relaxed_auc(torch.zeros(0), torch.zeros(3))
    with pytest.raises(ValueError, match='second_derivative'):
        auc_sigmoid_slope(0.1, second_derivative='numeric')
    x, y = batch(4, 2)
    with pytest.raises(ValueError, match='labels'):
        auc_loss(x, y.float())
