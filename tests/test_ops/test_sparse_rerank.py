"""The merge re-ranking must be exactly a full re-sort, ties included,
because Algorithm 1's gradient is a difference of ranks: an off-by-one
rank is a wrong gradient, not a small error."""
import pytest
import torch

from mmdet_rankloss.ops.ranking import exact_rank
from mmdet_rankloss.ops.sparse_rerank import rerank_sparse


def _devices():
    return ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])


@pytest.mark.parametrize('device', _devices())
@pytest.mark.parametrize('normalize', [False, True])
@pytest.mark.parametrize('few_values', [False, True])
def test_equals_full_sort(device, normalize, few_values):
    g = torch.Generator().manual_seed(int(normalize) + 2 * int(few_values))
    for _ in range(60):
        rows, n = (int(torch.randint(1, 4, (1, ), generator=g)),
                   int(torch.randint(1, 50, (1, ), generator=g)))
        if few_values:  # many ties, also between moved and unmoved values
            y = torch.randint(0, 5, (rows, n), generator=g).double()
            delta = torch.randint(-2, 3, (rows, n), generator=g).double()
        else:
            y = torch.randn(rows, n, generator=g, dtype=torch.float64)
            delta = torch.randn(rows, n, generator=g, dtype=torch.float64)
        y[torch.rand(rows, n, generator=g) < 0.1] = float('-inf')
        moved = torch.rand(rows, n, generator=g) < 0.3
        y, moved = y.to(device), moved.to(device)
        new = y + delta.to(device) * moved
        out = rerank_sparse(y, exact_rank(y, normalize), moved, new,
                            normalize)
        assert out is not None
        assert torch.equal(out, exact_rank(new, normalize))


def test_nothing_moved_and_batched_shape():
    y = torch.randn(2, 3, 7)
    r = exact_rank(y)
    moved = torch.zeros_like(y, dtype=torch.bool)
    assert torch.equal(rerank_sparse(y, r, moved, y), r)
    moved[1, 2, 3] = True
    new = y.clone()
    new[1, 2, 3] += 5
    assert torch.equal(rerank_sparse(y, r, moved, new), exact_rank(new))


def stable_ranks(x):
    """Brute force: positions in a stable descending sort (ties by index)."""
    order = torch.sort(-x, dim=-1, stable=True).indices
    positions = torch.arange(1, x.shape[-1] + 1, dtype=torch.float64)
    return torch.empty_like(positions.expand(x.shape)).scatter_(
        -1, order, positions.expand(x.shape).clone())


@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
@pytest.mark.parametrize('n', [100, 20000])
def test_long_tie_runs_are_merged_exactly(dtype, n):
    """Near-constant rows (a fresh detector head: runs of thousands of
    equal scores) and movers that land inside those runs, before, after
    and on their own old value; n = 20000 takes the NumPy sort path."""
    g = torch.Generator().manual_seed(n)
    y = torch.randint(0, 3, (3, n), generator=g).to(dtype)
    y[2] = 1.0  # one run over the whole row
    moved = torch.rand(3, n, generator=g) < 0.01
    moved[:, 0] = moved[:, -1] = True
    delta = torch.randint(-1, 2, (3, n), generator=g).to(dtype)
    new = torch.where(moved, y + delta, y)
    for normalize in (False, True):
        ranks = exact_rank(y, normalize)
        out = rerank_sparse(y, ranks, moved, new, normalize)
        expected = stable_ranks(new).to(out.dtype)
        if normalize:
            expected = expected / n
        assert torch.equal(out, expected)
