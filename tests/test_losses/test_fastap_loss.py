"""Tests of FastAP: Eq. 14 by brute force, pytorch-metric-learning, grads."""
import pytest
import torch
import torch.nn.functional as F

from mmdet.registry import MODELS
from mmdet_rankloss.losses.fastap_loss import FastAPLoss, fastap_loss

DEVICES = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])


def brute_fastap_loss(embeddings, labels, num_bins=10):
    """Eq. 14 with Python loops: triangular bins over squared distances."""
    x = embeddings.detach().double().tolist()
    y = labels.tolist()
    delta = 4.0 / num_bins
    centres = [delta * l for l in range(num_bins + 1)]
    aps = []
    for i in range(len(x)):
        h = [0.0] * len(centres)
        h_pos = [0.0] * len(centres)
        for j in range(len(x)):
            if j == i:
                continue
            d = min(4.0, max(0.0, sum((a - b)**2 for a, b in zip(x[i], x[j]))))
            for l, z in enumerate(centres):
                w = max(0.0, 1 - abs(d - z) / delta)
                h[l] += w
                if y[j] == y[i]:
                    h_pos[l] += w
        n_pos = sum(1 for j in range(len(x)) if j != i and y[j] == y[i])
        if n_pos == 0:
            continue
        ap, cum, cum_pos = 0.0, 0.0, 0.0
        for l in range(len(centres)):
            cum += h[l]
            cum_pos += h_pos[l]
            if cum > 0:
                ap += cum_pos * h_pos[l] / cum
        aps.append(ap / n_pos)
    return 1 - sum(aps) / len(aps) if aps else 0.0


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('b, c, num_bins', [(12, 3, 10), (10, 6, 4),
                                            (9, 9, 10), (16, 4, 25)])
def test_matches_eq14_brute_force(device, b, c, num_bins, batch):
    x, y = batch(b, c, device=device, seed=b + c)
    ours = fastap_loss(x, y, num_bins).item()
    assert ours == pytest.approx(brute_fastap_loss(x, y, num_bins), abs=1e-10)


@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
@pytest.mark.parametrize('b, c', [(16, 4), (32, 8), (12, 12), (20, 3)])
def test_matches_pytorch_metric_learning(dtype, b, c, batch):
    pml = pytest.importorskip('pytorch_metric_learning.losses')
    x, y = batch(b, c, dtype=dtype, seed=b * c)
    ours = FastAPLoss(num_bins=10)(x, y)
    ref = pml.FastAPLoss(num_bins=10)(x, y)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    assert ours.item() == pytest.approx(ref.item(), abs=tol)


def test_gradcheck_float64(batch):
    x, y = batch(10, 3, d=5, seed=7)
    x.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda v: fastap_loss(F.normalize(v, dim=1), y, 6), (x, ))


def test_perfectly_separated_classes_give_zero_loss():
    # two classes, each a single point; classes orthogonal: every positive
    # is at squared distance 0, every negative at 2.
    x = torch.tensor([[1.0, 0.0]] * 3 + [[0.0, 1.0]] * 3)
    y = torch.tensor([0, 0, 0, 1, 1, 1])
    assert fastap_loss(x, y).item() == pytest.approx(0.0, abs=1e-7)
    # swapping two labels makes it worse
    assert fastap_loss(x, torch.tensor([0, 0, 1, 0, 1, 1])).item() > 0.1


def test_queries_without_positives_are_skipped(batch):
    x, y = batch(8, 8, seed=3)
    y[:3] = 0  # queries 0-2 have positives, the other five do not
    full = fastap_loss(x, y).item()
    assert full == pytest.approx(brute_fastap_loss(x, y), abs=1e-10)
    # no positive anywhere, and an empty batch: zero loss with a graph
    x.requires_grad_(True)
    loss = fastap_loss(x, torch.arange(8))
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(x.grad, torch.zeros_like(x))
    empty = torch.zeros(0, 4, requires_grad=True)
    assert fastap_loss(empty, torch.zeros(0, dtype=torch.long)).item() == 0


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_half_precision(dtype, batch):
    x, y = batch(16, 4, dtype=torch.float32, seed=5)
    xh = x.to(dtype).requires_grad_(True)
    loss = MODELS.build(dict(type='FastAPLoss', loss_weight=2.0))(xh, y)
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(
        2 * fastap_loss(x.to(dtype).float(), y).item(), abs=1e-6)
    loss.backward()
    assert xh.grad.dtype == dtype and bool(torch.isfinite(xh.grad).all())


def test_bad_inputs_raise(batch):
    x, y = batch(6, 2)
    with pytest.raises(ValueError, match='labels'):
        fastap_loss(x, y[:5])
    with pytest.raises(ValueError, match='embeddings'):
        fastap_loss(x[0], y)
