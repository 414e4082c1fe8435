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


def test_long_tie_run_defers_to_full_sort():
    y = torch.zeros(1, 100)
    moved = torch.zeros_like(y, dtype=torch.bool)
    moved[0, 99] = True
    assert rerank_sparse(y, exact_rank(y), moved, y.clone()) is None
