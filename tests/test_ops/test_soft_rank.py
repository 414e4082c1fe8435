"""Tests of the sigmoid soft rank: brute force, gradients, limit, contract."""
import pytest
import torch

from mmdet_rankloss.ops.ranking import exact_rank
from mmdet_rankloss.ops.soft_rank import soft_rank

DEVICES = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])


def brute_soft_rank(x, temperature, descending):
    """Eq. 4 / Eq. 12 written out with the full (..., n, n) tensor."""
    diff = x[..., :, None] - x[..., None, :]  # x_i - x_k
    if descending:
        diff = -diff
    n = x.shape[-1]
    off_diag = ~torch.eye(n, dtype=torch.bool, device=x.device)
    return 1 + (torch.sigmoid(diff / temperature) * off_diag).sum(-1)


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('descending', [True, False])
@pytest.mark.parametrize('block_size', [None, 1, 3, 7])
def test_matches_brute_force_values_and_grads(device, descending, block_size):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 7, dtype=torch.float64, device=device)
    upstream = torch.randn_like(x)
    x1 = x.clone().requires_grad_(True)
    x2 = x.clone().requires_grad_(True)
    ours = soft_rank(x1, 0.3, descending, block_size)
    ref = brute_soft_rank(x2, 0.3, descending)
    torch.testing.assert_close(ours, ref)
    (ours * upstream).sum().backward()
    (ref * upstream).sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad)


@pytest.mark.parametrize('descending', [True, False])
def test_gradcheck_float64(descending):
    torch.manual_seed(1)
    x = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda v: soft_rank(v, 0.5, descending, block_size=2), (x, ))


def test_converges_to_exact_ranks_as_sigmoid_sharpens():
    torch.manual_seed(2)
    # distinct values at least 1e-2 apart, in random order
    x = (torch.randperm(50).double() * 0.01 +
         torch.rand(50, dtype=torch.float64) * 1e-3).reshape(2, 25)
    exact = exact_rank(x)
    errors = [(soft_rank(x, t) - exact).abs().max().item()
              for t in (1.0, 0.1, 0.01, 0.001)]
    assert all(a > b for a, b in zip(errors, errors[1:])), errors
    assert errors[-1] < 1e-3
    ascending = soft_rank(x, 1e-3, descending=False)
    torch.testing.assert_close(ascending, exact_rank(-x), atol=1e-3, rtol=0)


def test_ties_share_the_mean_rank_and_scale_is_ranks():
    x = torch.tensor([0.0, 1.0, 1.0, 5.0])
    r = soft_rank(x, 1e-4)  # descending: 5 -> 1, the two 1s -> 2.5, 0 -> 4
    torch.testing.assert_close(r, torch.tensor([4.0, 2.5, 2.5, 1.0]))
    # one element, and translation invariance
    assert soft_rank(torch.tensor([3.0]), 1.0).item() == 1.0
    y = torch.randn(9)
    torch.testing.assert_close(soft_rank(y, 0.7), soft_rank(y + 100.0, 0.7))


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_half_precision_is_ranked_in_fp32(dtype):
    torch.manual_seed(3)
    x = torch.randn(4, 30).to(dtype).requires_grad_(True)
    r = soft_rank(x, 0.1)
    assert r.dtype == torch.float32
    torch.testing.assert_close(r, soft_rank(x.detach().float(), 0.1))
    r.sum().backward()
    assert x.grad.dtype == dtype and bool(torch.isfinite(x.grad).all())


def test_empty_rows_and_memory_budget_block():
    assert soft_rank(torch.zeros(0, 5), 1.0).shape == (0, 5)
    # a (64, 64) batch of rows must not be summed as one 64^3 block when
    # the budget is smaller; values stay exact.
    torch.manual_seed(4)
    x = torch.randn(64, 64, dtype=torch.float64)
    torch.testing.assert_close(
        soft_rank(x, 0.2, block_size=5), brute_soft_rank(x, 0.2, True))


@pytest.mark.parametrize('kwargs, match', [
    (dict(x=torch.tensor(1.0)), 'shape'),
    (dict(x=torch.zeros(3, 0)), 'shape'),
    (dict(x=torch.arange(3)), 'floating'),
    (dict(x=torch.tensor([0.0, float('nan')])), 'NaN'),
    (dict(x=torch.zeros(3), temperature=0.0), 'temperature'),
    (dict(x=torch.zeros(3), block_size=0), 'block_size'),
])
def test_bad_input_raises_value_error(kwargs, match):
    with pytest.raises(ValueError, match=match):
        soft_rank(**kwargs)


def test_soft_rank_of_selected_elements_equals_the_full_soft_rank():
    """Ranking only M elements against their rows gives the same ranks and
    gradients as the full O(n^2) soft rank read at those elements, and
    ``within`` also ranks within a subset (the positives)."""
    from mmdet_rankloss.ops.soft_rank import soft_rank_of
    torch.manual_seed(0)
    x = torch.randn(3, 20, dtype=torch.float64, requires_grad=True)
    row = torch.tensor([0, 0, 1, 2, 2])
    col = torch.tensor([3, 7, 0, 19, 5])
    mine = soft_rank_of(x[row, col], x[row], temperature=0.3)
    full = soft_rank(x, temperature=0.3)[row, col]
    assert torch.allclose(mine, full, atol=1e-12)
    (g_mine, ) = torch.autograd.grad(mine.sum(), x)
    (g_full, ) = torch.autograd.grad(full.sum(), x)
    assert torch.allclose(g_mine, g_full, atol=1e-12)
    subset = torch.rand(3, 20) < 0.5
    subset[row, col] = True
    mine_again, masked = soft_rank_of(x[row, col], x[row], 0.3,
                                      within=subset[row])
    assert torch.equal(mine_again, mine)
    for m, r, c in zip(masked, row, col):
        only = x[r][subset[r]]
        expected = soft_rank(only, 0.3)[subset[r][:c].sum()]
        assert m.item() == pytest.approx(expected.item(), abs=1e-12)
    with pytest.raises(ValueError, match='values must have shape'):
        soft_rank_of(x[0], x)
    with pytest.raises(ValueError, match='within must have'):
        soft_rank_of(x[row, col], x[row], within=subset)
    with pytest.raises(ValueError, match='temperature'):
        soft_rank_of(x[row, col], x[row], temperature=-1)
