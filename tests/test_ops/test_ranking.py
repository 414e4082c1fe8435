"""Tests of the exact ranker and of Algorithm 1 (RaMBO) against brute force."""
import pytest
import torch

from mmdet_rankloss.ops.ranking import (blackbox_rank, blackbox_rank_loss,
                                        exact_rank, margin_shift)

DEVICES = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])


def brute_rank(y):
    """Eq. 2 with the documented tie rule, by O(n^2) counting (last dim)."""
    above = (y.unsqueeze(-2) > y.unsqueeze(-1)).sum(-1)  # j beats i
    n = y.shape[-1]
    earlier = torch.ones(n, n, dtype=torch.bool, device=y.device).tril(-1)
    tied_before = ((y.unsqueeze(-2) == y.unsqueeze(-1)) & earlier).sum(-1)
    return (1 + above + tied_before).to(torch.float64)


def brute_algorithm1(y, grad_ranks, lambda_val):
    """Algorithm 1 with brute-force ranks: -(rk(y) - rk(y_lambda)) / lambda."""
    y = y.double()
    y_lambda = y + lambda_val * grad_ranks.double()
    return -(brute_rank(y) - brute_rank(y_lambda)) / lambda_val


def interpolated_loss(y, c, lambda_val):
    """The interpolation behind Algorithm 1 for the linear loss c . rk.

    phi(y) = min over permutations of y . pi = y . rk(y) (Proposition 1);
    f_lambda(y) = (phi(y + lambda c) - phi(y)) / lambda. By Danskin's
    theorem its gradient is (rk(y + lambda c) - rk(y)) / lambda, which is
    Algorithm 1; as lambda -> 0 it tends to the directional derivative
    c . rk(y), the true piecewise-constant loss.
    """

    def phi(v):
        return (v * brute_rank(v)).sum()

    return (phi(y + lambda_val * c) - phi(y)) / lambda_val


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('shape', [(1, ), (7, ), (3, 50), (2, 3, 20)])
def test_exact_rank_matches_eq2_count(device, shape):
    torch.manual_seed(0)
    y = torch.randn(shape, device=device)
    # plenty of ties: quantise half of the rows
    y = torch.where(torch.rand(shape, device=device) < 0.5,
                    (y * 2).round() / 2, y)
    ranks = exact_rank(y)
    assert ranks.dtype == torch.float32
    torch.testing.assert_close(ranks.double(), brute_rank(y))
    torch.testing.assert_close(
        exact_rank(y, normalize=True).double(),
        brute_rank(y) / shape[-1])


@pytest.mark.parametrize('device', DEVICES)
def test_ties_all_equal_and_single(device):
    y = torch.full((5, ), 0.3, device=device)
    assert exact_rank(y).tolist() == [1, 2, 3, 4, 5]
    assert exact_rank(torch.tensor([2.0, 1.0, 2.0, 1.0],
                                   device=device)).tolist() == [1, 3, 2, 4]
    one = torch.tensor([0.7], device=device, requires_grad=True)
    r = blackbox_rank(one, 0.5)
    assert r.tolist() == [1.0]
    (r * 3).sum().backward()
    assert one.grad.tolist() == [0.0]  # nothing to swap with


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('lambda_val', [0.05, 0.5, 5.0])
@pytest.mark.parametrize('normalize', [False, True])
def test_blackbox_grad_equals_brute_force_algorithm1(device, lambda_val,
                                                     normalize):
    torch.manual_seed(1)
    y = torch.randn(4, 30, device=device, dtype=torch.float64)
    weights = torch.randn(4, 30, device=device, dtype=torch.float64)
    y.requires_grad_(True)
    ranks = blackbox_rank(y, lambda_val, normalize)
    (weights * ranks).sum().backward()
    # dL/d(ranks) = weights. With normalised ranks rho = rk / n Algorithm 1
    # perturbs by lambda * dL/drho and returns -(rho - rho_lambda) / lambda.
    expected = brute_algorithm1(y.detach(), weights, lambda_val)
    if normalize:
        expected = expected / y.shape[-1]
    torch.testing.assert_close(y.grad, expected)
    assert y.grad.abs().sum() > 0


def test_normalize_is_lambda_times_n():
    """The same loss on rk / n (normalised) and on integer rk: lambda * n."""
    torch.manual_seed(2)
    y = torch.randn(40, dtype=torch.float64, requires_grad=True)
    w = torch.randn(40, dtype=torch.float64)
    (w * blackbox_rank(y, 0.02, normalize=True)).sum().backward()
    g_norm = y.grad.clone()
    y.grad = None
    (w * blackbox_rank(y, 0.02 * 40) / 40).sum().backward()
    torch.testing.assert_close(g_norm, y.grad)
    assert g_norm.abs().sum() > 0


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_half_precision(device, dtype):
    torch.manual_seed(3)
    y32 = torch.randn(3, 64, device=device)
    y = y32.to(dtype).requires_grad_(True)
    w = torch.randn(3, 64, device=device)
    ranks = blackbox_rank(y, 0.5)
    assert ranks.dtype == torch.float32
    torch.testing.assert_close(ranks.double(), brute_rank(y.detach().float()))
    (w * ranks).sum().backward()
    assert y.grad.dtype == dtype
    expected = brute_algorithm1(y.detach().float(), w, 0.5)
    torch.testing.assert_close(y.grad.double(), expected)
    assert torch.isfinite(y.grad).all()


@pytest.mark.parametrize('bad, match', [
    (torch.tensor([1.0, float('nan')]), 'non-finite'),
    (torch.tensor([1.0, float('inf')]), 'non-finite'),
    (torch.tensor([1.0, float('-inf')]), 'non-finite'),
    (torch.tensor(1.0), '0-d'),
    (torch.zeros(3, 0), 'empty'),
    (torch.tensor([1, 2]), 'floating'),
])
def test_blackbox_rank_rejects_bad_scores(bad, match):
    with pytest.raises(ValueError, match=match):
        blackbox_rank(bad, 0.5)


@pytest.mark.parametrize('lambda_val', [0, -1.0, float('nan'), float('inf'),
                                        True, '0.5'])
def test_rejects_bad_lambda(lambda_val):
    y = torch.randn(4)
    with pytest.raises(ValueError, match='lambda_val'):
        blackbox_rank(y, lambda_val)
    with pytest.raises(ValueError, match='lambda_val'):
        blackbox_rank_loss(y, lambda r: r.sum(), lambda_val)


def test_blackbox_rank_loss_rejects_nan_and_non_scalar():
    with pytest.raises(ValueError, match='non-finite'):
        blackbox_rank_loss(torch.tensor([0.0, float('nan')]), lambda r: r[0],
                           0.5)
    with pytest.raises(ValueError, match='scalar'):
        blackbox_rank_loss(torch.randn(3), lambda r: r * 2, 0.5)


def test_interpolation_gradient_is_algorithm1():
    """Finite differences of f_lambda reproduce Algorithm 1's gradient."""
    torch.manual_seed(4)
    y = torch.randn(12, dtype=torch.float64)
    c = torch.randn(12, dtype=torch.float64)
    lam = 0.7
    y_req = y.clone().requires_grad_(True)
    (c * blackbox_rank(y_req, lam)).sum().backward()
    eps = 1e-7  # far below every gap: f_lambda is linear there
    fd = torch.stack([(interpolated_loss(y + eps * e, c, lam) -
                       interpolated_loss(y - eps * e, c, lam)) / (2 * eps)
                      for e in torch.eye(12, dtype=torch.float64)])
    torch.testing.assert_close(y_req.grad, fd, atol=1e-5, rtol=1e-5)


def test_interpolation_converges_to_true_loss_as_lambda_vanishes():
    torch.manual_seed(5)
    y = torch.randn(15, dtype=torch.float64)
    c = torch.randn(15, dtype=torch.float64)
    true_loss = (c * brute_rank(y)).sum()
    gaps = (y.unsqueeze(0) - y.unsqueeze(1)).abs()
    min_gap = gaps[gaps > 0].min()
    errors = []
    for lam in [10.0, 1.0, 0.1, 0.01, 1e-4]:
        errors.append(float((interpolated_loss(y, c, lam) - true_loss).abs()))
    # the error shrinks monotonically and vanishes once no swap is in reach
    assert all(a >= b - 1e-9 for a, b in zip(errors, errors[1:]))
    assert errors[0] > 1e-3
    lam_small = float(min_gap / (2 * c.abs().max()))
    assert abs(float(interpolated_loss(y, c, lam_small) - true_loss)) < 1e-9


def test_gradient_counts_swaps_within_reach():
    """lambda * grad_i = #passing i - #passed by i under y + lambda * c.

    So the gradient is nonzero only where a rank swap lies within
    lambda * |dL/drk|, and exactly zero (the true gradient) when lambda is
    below the smallest gap over the largest |dL/drk| difference.
    """
    torch.manual_seed(6)
    y = torch.randn(25, dtype=torch.float64)
    c = torch.randn(25, dtype=torch.float64) * 0.2
    for lam in [1e-4, 0.1, 1.0, 10.0]:
        y_req = y.clone().requires_grad_(True)
        (c * blackbox_rank(y_req, lam)).sum().backward()
        moved = y + lam * c
        before = y.unsqueeze(0) > y.unsqueeze(1)  # [i, j]: j above i
        after = moved.unsqueeze(0) > moved.unsqueeze(1)
        overtakes = (before & ~after).sum(1)  # i passes j: pushed up
        overtaken = (~before & after).sum(1)
        torch.testing.assert_close(y_req.grad * lam,
                                   (overtaken - overtakes).double())
        assert not (y_req.grad[(overtakes + overtaken) == 0] != 0).any()
    gaps = (y.unsqueeze(0) - y.unsqueeze(1)).abs()
    lam = float(gaps[gaps > 0].min() / (2 * (2 * c.abs().max())))
    y_req = y.clone().requires_grad_(True)
    (c * blackbox_rank(y_req, lam)).sum().backward()
    assert (y_req.grad == 0).all()


def _toy_loss(ranks):
    """A nonlinear, rank-based scalar loss (depends on the rank values)."""
    return (ranks[..., :5]**2).sum() / 100 - ranks[..., 5:].log().sum()


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('normalize', [False, True])
def test_blackbox_rank_loss_equals_composition_at_unit_scale(device,
                                                             normalize):
    torch.manual_seed(7)
    y = torch.randn(3, 40, device=device, dtype=torch.float64)
    a = y.clone().requires_grad_(True)
    _toy_loss(blackbox_rank(a, 0.3, normalize)).backward()
    b = y.clone().requires_grad_(True)
    loss, grad = blackbox_rank_loss(
        b, _toy_loss, 0.3, normalize, return_grad=True)
    loss.backward()
    torch.testing.assert_close(
        loss, _toy_loss(exact_rank(y, normalize)).to(loss.dtype))
    torch.testing.assert_close(a.grad, b.grad)
    torch.testing.assert_close(grad, b.grad)
    assert a.grad.abs().sum() > 0


@pytest.mark.parametrize('device', DEVICES)
def test_blackbox_rank_loss_is_immune_to_upstream_scale(device):
    torch.manual_seed(8)
    y = torch.randn(2, 60, device=device)
    ref = y.clone().requires_grad_(True)
    blackbox_rank_loss(ref, _toy_loss, 0.5, True).backward()
    assert ref.grad.abs().sum() > 0
    for c in [1.0, 7.5, 1024.0]:
        x = y.clone().requires_grad_(True)
        (blackbox_rank_loss(x, _toy_loss, 0.5, True) * c).backward()
        torch.testing.assert_close(x.grad, ref.grad * c, rtol=0, atol=0)
    # the composition, by contrast, changes direction (c acts as c * lambda)
    x = y.clone().requires_grad_(True)
    (_toy_loss(blackbox_rank(x, 0.5, True)) * 1024.0).backward()
    cos = torch.nn.functional.cosine_similarity(
        x.grad.flatten(), ref.grad.flatten(), dim=0)
    assert cos < 0.99


@pytest.mark.parametrize('device', DEVICES)
def test_neg_inf_masks_elements(device):
    torch.manual_seed(9)
    y = torch.randn(50, device=device)
    mask = torch.rand(50, device=device) < 0.4
    x = y.masked_fill(mask, float('-inf')).detach().requires_grad_(True)
    loss = blackbox_rank_loss(x, lambda r: -(r[~mask].log()).sum(), 5.0)
    loss.backward()
    assert torch.isfinite(x.grad).all()
    assert (x.grad[mask] == 0).all()
    assert x.grad[~mask].abs().sum() > 0
    ranks = exact_rank(x)
    assert (ranks[mask] > ranks[~mask].max()).all()  # masked ones are last
    # same as ranking the unmasked elements alone
    kept = y[~mask].clone().requires_grad_(True)
    blackbox_rank_loss(kept, lambda r: -r.log().sum(), 5.0).backward()
    torch.testing.assert_close(x.grad[~mask], kept.grad)


def test_no_grad_and_no_requires_grad_paths():
    y = torch.randn(10)
    assert blackbox_rank_loss(y, lambda r: r[0], 0.5).requires_grad is False
    with torch.no_grad():
        loss, grad = blackbox_rank_loss(
            y.requires_grad_(True), lambda r: r[0], 50.0, return_grad=True)
    assert grad.shape == y.shape and grad.abs().sum() > 0
    # a loss that does not depend on the ranks gives a zero gradient
    z = torch.randn(6, requires_grad=True)
    blackbox_rank_loss(z, lambda r: torch.tensor(2.0), 0.5).backward()
    assert (z.grad == 0).all()


def test_margin_shift():
    y = torch.tensor([0.5, 0.5], dtype=torch.float16)
    pos = torch.tensor([True, False])
    out = margin_shift(y, pos, 0.15)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, torch.tensor([0.425, 0.575]))


@pytest.mark.parametrize('shape', [(50, ), (4, 30), (2, 3, 17)])
def test_subset_rank_counts_subset_members_at_or_above(shape):
    """The rank among a subset equals the count of subset elements at or
    above each member in the full exact ranking, ties (many) included."""
    from mmdet_rankloss.ops.ranking import subset_rank
    torch.manual_seed(0)
    scores = torch.randint(0, 6, shape).float()  # heavy ties
    subset = torch.rand(shape) < 0.4
    ranks = exact_rank(scores)
    expected = torch.zeros(shape)
    flat_s, flat_r = subset.reshape(-1, shape[-1]), ranks.reshape(
        -1, shape[-1])
    for row in range(flat_s.shape[0]):
        for i in range(shape[-1]):
            if flat_s[row, i]:
                expected.view(-1, shape[-1])[row, i] = (
                    flat_s[row] & (flat_r[row] <= flat_r[row, i])).sum()
    assert torch.equal(subset_rank(scores, subset), expected)
    assert torch.equal(subset_rank(scores, torch.zeros_like(subset)),
                       torch.zeros(shape))


def test_exact_rank_is_the_stable_order_with_and_without_ties():
    """The fast path (unstable sort, taken when no two scores are equal)
    and the tie path (stable sort) both give the index-ordered ranking."""
    torch.manual_seed(0)
    distinct = torch.randperm(1000).float().view(4, 250) / 7
    tied = distinct.clone()
    tied[2, 10:20] = tied[2, 5]  # one tie block in one row
    for scores in (distinct, tied):
        order = torch.sort(scores, dim=-1, descending=True, stable=True)[1]
        expected = torch.empty_like(scores).scatter_(
            -1, order, torch.arange(1, 251.).expand(4, 250))
        assert torch.equal(exact_rank(scores), expected)


def _shadow_meta():
    from helpers import device_modes
    return device_modes().ShadowMeta()


@pytest.mark.parametrize('normalize', [False, True])
def test_public_ops_take_the_device_path_without_a_read(normalize):
    """On a device (``meta`` with CPU values, the CUDA path) the ranks and
    the Algorithm-1 gradients of ``blackbox_rank`` and
    ``blackbox_rank_loss`` equal the CPU's (NumPy order, sparse merge),
    ties included, and nothing is read back or copied to the device."""
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 5, (3, 40), generator=g).float()  # heavy ties
    w = torch.randn(3, 40, generator=g)
    positives = torch.rand(3, 40, generator=g) < 0.3

    def run(device_mode):
        mask = device_mode.to_meta(positives) if device_mode else positives

        def ap_like(ranks):  # moves the positives only (the merge's case)
            return (ranks * mask).sum() / ranks.shape[-1]

        x = (device_mode.to_meta(y) if device_mode else y.clone())
        x.requires_grad_(True)
        ranks = blackbox_rank(x, 0.5, normalize)
        (ranks * (device_mode.to_meta(w) if device_mode else w)
         ).sum().backward()
        x2 = (device_mode.to_meta(y) if device_mode else y.clone())
        x2.requires_grad_(True)
        loss, grad = blackbox_rank_loss(x2, ap_like, 0.5, normalize,
                                        return_grad=True)
        (loss * 3.0).backward()
        out = (ranks, x.grad, loss, grad, x2.grad)
        return [device_mode.value(t) if device_mode else t.detach()
                for t in out]

    expected = run(None)
    with _shadow_meta() as meta:
        got = run(meta)
    assert meta.total == 0, meta.trace
    for a, b in zip(got, expected):
        assert torch.equal(a, b)
