"""The loss-landscape picture: ``1 - AP`` and the blackbox interpolation,
checked against an independent NumPy implementation of Algorithm 1."""
import numpy as np
import pytest
import torch
from PIL import Image


@pytest.fixture
def tool():
    from rankloss_lab.analysis import plot_loss_landscape
    return plot_loss_landscape


def ranks(w):
    """Normalised descending ranks, ties by index (1/n = highest)."""
    order = np.lexsort((np.arange(len(w)), -w))
    r = np.empty(len(w))
    r[order] = np.arange(1, len(w) + 1)
    return r / len(w)


def reference(w, labels, lam):
    """1 - AP and f_lambda from first principles: AP = mean over positives
    of (rank among positives) / (rank among all); the rank among positives
    is held constant when differentiating (the package's default)."""
    n, pos = len(w), np.flatnonzero(labels)
    r = ranks(w)
    k = np.empty(n)
    k[pos] = ranks(w[pos]) * len(pos) / n  # normalised like r
    loss = 1 - np.mean(k[pos] / r[pos])
    a = np.zeros(n)
    a[pos] = k[pos] / (len(pos) * r[pos]**2)  # dL/dr
    r_lam = ranks(w + lam * a)
    k_lam = np.empty(n)
    k_lam[pos] = ranks(-r_lam[pos]) * len(pos) / n
    loss_lam = 1 - np.mean(k_lam[pos] / r_lam[pos])
    return loss, loss_lam + w @ (r_lam - r) / lam


@pytest.mark.parametrize('lam', [0.05, 0.5, 3.0])
def test_interpolation_matches_numpy_algorithm_1(tool, lam):
    s0, d, e, labels = tool.make_example(6, 2, seed=3)
    t = torch.linspace(-3, 3, 241, dtype=torch.float64)
    scores = s0 + t[:, None] * d + 0.3 * e
    true, interp = tool.landscape(scores, labels, lam)
    ref = np.array([reference(w.numpy(), labels.numpy(), lam)
                    for w in scores])
    np.testing.assert_allclose(true.numpy(), ref[:, 0], atol=1e-12)
    np.testing.assert_allclose(interp.numpy(), ref[:, 1], atol=1e-9)
    # the example is not trivial: the loss takes several values
    assert len(np.unique(ref[:, 0].round(9))) >= 3


def test_small_lambda_is_faithful_large_lambda_is_not(tool):
    s0, d, e, labels = tool.make_example(8, 3, seed=0)
    t = torch.linspace(-2, 2, 401, dtype=torch.float64)
    scores = s0 + t[:, None] * d
    true, small = tool.landscape(scores, labels, 1e-4)
    _, large = tool.landscape(scores, labels, 2.5)
    # away from the jumps (all but a few points) f_lambda -> 1 - AP
    assert (small - true).abs().le(1e-6).float().mean() > 0.95
    # the interpolation lies below the steps it smooths; a strong one
    # is far from them
    assert bool((large <= true + 1e-9).all())
    assert float((true - large).abs().max()) > 0.1


def test_cli_writes_png(tool, tmp_path):
    out = str(tmp_path / 'sub' / 'landscape.png')
    assert tool.main(['--out', out, '--lambdas', '0.2', '1', '--steps', '21',
                      '--grid', '9', '--num-scores', '5',
                      '--num-positives', '2']) == 0
    image = np.asarray(Image.open(out))
    assert image.ndim == 3 and image.shape[0] > 200


@pytest.mark.parametrize('n, p', [(5, 0), (5, 5), (1, 1)])
def test_bad_example_named(tool, n, p):
    with pytest.raises(ValueError, match='--num-'):
        tool.make_example(n, p, seed=0)


def test_bad_lambda_rejected(tool, tmp_path):
    with pytest.raises(SystemExit):
        tool.main(['--out', str(tmp_path / 'x.png'), '--lambdas', '0'])
