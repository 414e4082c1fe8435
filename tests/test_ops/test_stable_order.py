"""The descending order with ties by index, both code paths."""
import pytest
import torch

from mmdet_rankloss.ops import stable_order
from mmdet_rankloss.ops.stable_order import descending_order

DEVICES = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])


def awkward_rows(dtype, n=5000, device='cpu'):
    """Distinct values, +-inf, +0.0 / -0.0, and rows made of ties."""
    torch.manual_seed(0)
    x = torch.randn(4, n)
    x[0, :40], x[0, 40:80] = float('inf'), float('-inf')
    x[1, :30], x[1, 30:60] = 0.0, -0.0
    x[2] = torch.randint(-4, 4, (n, )).float()
    x[3] = 1.0  # one long run
    return x.to(dtype).to(device)


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('dtype', [torch.float32, torch.float16,
                                   torch.bfloat16, torch.float64])
@pytest.mark.parametrize('numpy_min', [4096, 2**40])
def test_matches_the_stable_descending_sort(device, dtype, numpy_min,
                                            monkeypatch):
    """Both paths (NumPy int64 keys on CPU, torch.sort + tie runs) return
    exactly what a stable sort of the negated values returns."""
    monkeypatch.setattr(stable_order, '_NUMPY_MIN_LENGTH', numpy_min)
    x = awkward_rows(dtype, device=device)
    neg_sorted, order = descending_order(x)
    ref_values, ref_order = torch.sort(-x, dim=-1, stable=True)
    assert torch.equal(order, ref_order)
    assert torch.equal(neg_sorted, ref_values)
    assert neg_sorted.dtype == dtype and order.dtype == torch.int64


def test_short_and_batched_shapes():
    x = torch.tensor([[[3., 1., 3.], [0., 0., 0.]]])
    neg_sorted, order = descending_order(x)
    assert order.tolist() == [[[0, 2, 1], [0, 1, 2]]]
    assert descending_order(torch.tensor([2.]))[1].tolist() == [0]


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('columns', [1, 3, 20, 300])
def test_column_orders_equal_a_sort_of_each_column(device, columns):
    """The columns' orders taken from the flat order are exactly the
    stable sorts of the columns, with long runs of ties (a fresh dense
    head's near-constant scores), -inf and both zeros."""
    torch.manual_seed(columns)
    rows = 30000 // columns
    x = (-4.595 + 0.0027 * torch.randn(rows, columns)).sigmoid()
    x[:rows // 4] = torch.randint(0, 3, (rows // 4, columns)).float()
    x[-5:] = float('-inf')
    x[-10:-5, 0], x[-15:-10, 0] = 0.0, -0.0
    x = x.to(device)
    neg_sorted, order = stable_order.column_orders(
        *descending_order(x.reshape(1, -1)), columns)
    ref_values, ref_order = torch.sort(-x.t(), dim=-1, stable=True)
    assert torch.equal(order, ref_order)
    assert torch.equal(neg_sorted, ref_values)


def test_order_image_orders_like_the_floats():
    """Every pair of fp32 values, the specials among them, compares as
    their int32 images do; only -0.0 and +0.0, equal floats, get two
    images (-0.0 one below)."""
    tiny = torch.finfo(torch.float32).tiny
    special = torch.tensor([
        float('-inf'), -3.4e38, -1.0, -tiny, -1e-45, -0.0, 0.0, 1e-45, tiny,
        1.0, 3.4e38, float('inf')
    ])
    values = torch.cat([special, torch.randn(500) * 10.0**torch.randint(
        -30, 30, (500, ), generator=torch.Generator().manual_seed(0))])
    image = stable_order.order_image(values)
    assert image.dtype == torch.int32
    a, b = values[:, None], values[None, :]
    ia, ib = image[:, None], image[None, :]
    zeros = (a == 0) & (b == 0)
    assert torch.equal((ia < ib)[~zeros], (a < b)[~zeros])
    assert torch.equal((ia == ib)[~zeros], (a == b)[~zeros])
    assert stable_order.order_image(torch.tensor([-0.0, 0.0])).tolist() == [
        -1, 0]
