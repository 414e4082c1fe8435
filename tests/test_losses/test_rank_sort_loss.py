"""Rank & Sort Loss, AP Loss's error-driven update and their shared core.

Values and updates are compared with a brute-force implementation of the
papers' definitions (``_error_driven_reference``: loops over all pairs, an
explicit matrix of primary terms); the properties every loss has are in
``test_loss_contract.py``.
"""
import pytest
import torch

from mmdet.registry import MODELS
from mmdet_rankloss.losses import (ErrorDrivenAPLoss, RankSortLoss,
                                   error_driven_loss, error_driven_terms)

from _error_driven_reference import reference  # tests/test_losses on sys.path

MODES = ('ap', 'rs', 'alrp')


def random_ranking(seed, n=24, ties=True, subset=False):
    gen = torch.Generator().manual_seed(seed)
    s = torch.randn(n, generator=gen, dtype=torch.float64) * 1.5
    if ties:  # exact ties, and a coarse grid on every other seed
        s[3] = s[5]
        s[7] = s[8] = s[9]
        if seed % 2:
            s = (s * 4).round() / 4
    positives = torch.rand(n, generator=gen) < 0.35
    positives[:2] = torch.tensor([True, False])
    negatives = ~positives
    if subset:  # some scores take no part
        negatives &= torch.rand(n, generator=gen) < 0.8
    num_pos = int(positives.sum())
    quality = torch.rand(num_pos, generator=gen, dtype=torch.float64)
    if num_pos > 2:
        quality[1] = quality[0]  # tied labels
    loc_error = torch.rand(num_pos, generator=gen, dtype=torch.float64)
    return s, positives, negatives, quality, loc_error


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('delta', [0.5, 1.0])
@pytest.mark.parametrize('seed', range(6))
def test_core_matches_brute_force(mode, delta, seed):
    s, pos, neg, quality, loc_error = random_ranking(seed, subset=seed > 2)
    terms = error_driven_terms(s, pos, delta, mode, neg, quality, loc_error)
    ref, update, primary = reference(s, pos, delta, mode, neg, quality,
                                     loc_error)
    assert terms.loss.item() == pytest.approx(ref['loss'], abs=1e-12)
    assert terms.ranking.item() == pytest.approx(ref['ranking'], abs=1e-12)
    assert terms.sorting.item() == pytest.approx(ref['sorting'], abs=1e-12)
    assert terms.loc.item() == pytest.approx(ref['loc'], abs=1e-12)
    torch.testing.assert_close(terms.grad, update, atol=1e-12, rtol=0)
    if mode == 'alrp':
        torch.testing.assert_close(terms.loc_weight, ref['loc_weight'],
                                   atol=1e-12, rtol=0)
    # the value is the sum of the primary terms (aLRP: of cls + loc)
    total = ref['loss'] + (ref['loc'] if mode == 'alrp' else 0)
    if mode != 'alrp' or bool((primary.sum(1)[pos] > 0).all()):
        assert primary.sum().item() / int(pos.sum()) == pytest.approx(
            total, abs=1e-12)


@pytest.mark.parametrize('mode', MODES)
def test_update_is_balanced(mode):
    """Sum of the positives' updates = - sum of the negatives' (the papers'
    theorem), on a small ranking and on a long fp32 one (sorted by the
    NumPy key path)."""
    for n, dtype in ((24, torch.float64), (20000, torch.float32)):
        gen = torch.Generator().manual_seed(n)
        s = torch.randn(n, generator=gen).to(dtype)
        pos = torch.rand(n, generator=gen) < (0.3 if n < 100 else 0.01)
        num_pos = int(pos.sum())
        terms = error_driven_terms(s, pos, 0.5, mode,
                                   quality=torch.rand(num_pos, generator=gen),
                                   loc_error=torch.rand(num_pos,
                                                        generator=gen))
        up_pos = terms.grad[pos].double().sum()
        up_neg = terms.grad[~pos].double().sum()
        assert up_pos < 0 < up_neg
        scale = 1e-12 if dtype == torch.float64 else 1e-5
        assert (up_pos + up_neg).abs().item() < scale * up_neg.item()
        assert (terms.grad[~pos] >= 0).all()
        if mode != 'rs':  # rs: a positive may be pushed down by sorting
            assert (terms.grad[pos] <= 0).all()


@pytest.mark.parametrize('mode', MODES)
def test_long_ranking_matches_dense_formula(mode):
    """The sorted prefix-sum path (n > 4096, fp32) equals the explicit
    (negatives x positives) evaluation of the same formulas in float64."""
    gen = torch.Generator().manual_seed(5)
    n, delta = 6000, 0.5
    s = (torch.randn(n, generator=gen) * 2).float()
    s[:50] = s[50]  # ties
    pos = torch.rand(n, generator=gen) < 0.02
    num_pos = int(pos.sum())
    quality = torch.rand(num_pos, generator=gen)
    terms = error_driven_terms(s, pos, delta, mode, quality=quality,
                               loc_error=quality)
    sd = s.double()
    u, v = sd[pos], sd[~pos]
    h = ((v[None, :] - u[:, None]) / (2 * delta) + 0.5).clamp(0, 1)
    hpp = ((u[None, :] - u[:, None]) / (2 * delta) + 0.5).clamp(0, 1)
    hpp.fill_diagonal_(0)
    nfp = h.sum(1)
    rank = 1 + hpp.sum(1) + nfp
    assert terms.ranking.item() == pytest.approx(
        (nfp / rank).mean().item(), abs=1e-9)
    if mode == 'alrp':
        e = quality.double()
        ell = (nfp + e + hpp @ e) / rank
        w = torch.where(nfp > 0, ell / nfp, torch.zeros_like(nfp))
    else:
        w = 1 / rank
    expected = (w[:, None] * h).sum(0) / num_pos
    torch.testing.assert_close(terms.grad[~pos].double(), expected,
                               atol=1e-6, rtol=1e-5)


def test_rs_without_labels_is_ap():
    s, pos, neg, _, _ = random_ranking(1)
    rs = error_driven_terms(s, pos, 0.5, 'rs', neg)
    ap = error_driven_terms(s, pos, 0.5, 'ap', neg)
    assert rs.sorting.item() == 0
    assert rs.loss.item() == ap.loss.item()
    torch.testing.assert_close(rs.grad, ap.grad)


def test_sorting_error_vanishes_when_sorted():
    """Positives far above the negatives, in label order: zero loss."""
    s = torch.tensor([9., 6., 3., -3., -4.], dtype=torch.float64)
    pos = torch.tensor([True, True, True, False, False])
    quality = torch.tensor([0.9, 0.7, 0.5], dtype=torch.float64)
    terms = error_driven_terms(s, pos, 0.5, 'rs', quality=quality)
    assert terms.loss.item() == 0 and not terms.grad.any()
    # swap the labels: the sorting error appears, the ranking error not
    terms = error_driven_terms(s, pos, 0.5, 'rs', quality=quality.flip(0))
    assert terms.ranking.item() == 0 and terms.sorting.item() > 0
    assert terms.grad[0] > 0 and terms.grad[2] < 0  # top one pushed down


def test_function_backward_scales_with_grad_output():
    s, pos, neg, quality, _ = random_ranking(2)
    x = s.clone().requires_grad_(True)
    loss, parts, _ = error_driven_loss(x, pos, 0.5, 'rs', neg, quality)
    (3 * loss).backward()
    ref = error_driven_terms(s, pos, 0.5, 'rs', neg, quality)
    torch.testing.assert_close(x.grad, 3 * ref.grad)
    assert not parts.requires_grad


def _module_reference(cls_score, labels, weight, quality, delta, mode):
    """The module's ranking by hand: flatten (N, C) with the label's score
    positive and rows of weight 0 left out, then the brute force."""
    num_classes = cls_score.shape[1] - 1
    keep = weight > 0
    scores = cls_score.detach()[keep, :num_classes].double()
    lab = labels[keep]
    pos = torch.zeros_like(scores, dtype=torch.bool)
    rows = (lab < num_classes).nonzero().squeeze(1)
    pos[rows, lab[rows]] = True
    values, update, _ = reference(scores.reshape(-1), pos.reshape(-1), delta,
                                  mode, quality=quality[keep][rows])
    grad = torch.zeros_like(cls_score, dtype=torch.float64)
    grad[keep, :num_classes] = update.view(-1, num_classes)
    return values, grad


@pytest.mark.parametrize('name, mode', [('RankSortLoss', 'rs'),
                                        ('ErrorDrivenAPLoss', 'ap')])
def test_module_matches_reference(name, mode, rpn_batch):
    cls_score, labels = rpn_batch(12, 3, fg=0.4, seed=3)
    cls_score = cls_score.detach().double().requires_grad_(True)
    weight = torch.ones(12, dtype=torch.float64)
    weight[[1, 4]] = 0
    quality = torch.rand(12, generator=torch.Generator().manual_seed(0),
                         dtype=torch.float64)
    loss = MODELS.build(dict(type=name, loss_weight=2.0))
    kwargs = dict(quality=quality) if mode == 'rs' else {}
    out = loss(cls_score, labels, weight, **kwargs)
    key = 'loss_rank_sort' if mode == 'rs' else 'loss_ap'
    out[key].backward()
    values, grad = _module_reference(
        cls_score, labels, weight,
        quality if mode == 'rs' else torch.ones_like(quality), loss.delta,
        mode)
    assert out[key].item() == pytest.approx(2 * values['loss'], abs=1e-12)
    torch.testing.assert_close(cls_score.grad, 2 * grad)
    if mode == 'rs':
        assert out['rs_sorting'].item() == pytest.approx(values['sorting'])


def test_defaults_are_the_papers():
    assert RankSortLoss().delta == 0.5
    assert ErrorDrivenAPLoss().delta == 1.0


def test_no_positives_zero_loss_that_backpropagates(rpn_batch):
    cls_score, labels = rpn_batch(20, 3)
    labels = torch.full_like(labels, 3)
    out = RankSortLoss()(cls_score, labels)
    assert out['loss_rank_sort'].item() == 0
    out['loss_rank_sort'].backward()
    assert cls_score.grad is not None and not cls_score.grad.any()


def test_all_scores_tied(rpn_batch):
    cls_score, labels = rpn_batch(20, 3, seed=4)
    tied = torch.zeros_like(cls_score, requires_grad=True)
    out = RankSortLoss()(tied, labels,
                         quality=torch.linspace(0.1, 1, 20))
    out['loss_rank_sort'].backward()
    assert torch.isfinite(tied.grad).all()
    assert tied.grad.sum().abs().item() < 1e-6
    # every pair is a half-relation: ranking error is N_FP / rank with
    # N_FP = |N| / 2 and rank = 1 + (|N| + |P| - 1) / 2
    num_pos = int((labels < 3).sum())
    num_neg = 20 * 3 - num_pos
    expected = (num_neg / 2) / (1 + (num_neg + num_pos - 1) / 2)
    assert out['rs_ranking'].item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_half_precision(dtype, rpn_batch):
    cls_score, labels = rpn_batch(40, 4, seed=6)
    quality = torch.rand(40, generator=torch.Generator().manual_seed(1))
    ref = RankSortLoss()(cls_score, labels, quality=quality)
    ref['loss_rank_sort'].backward()
    half = cls_score.detach().to(dtype).requires_grad_(True)
    out = RankSortLoss()(half, labels, quality=quality)
    out['loss_rank_sort'].backward()
    assert half.grad.dtype == dtype
    # the half scores are rounded: same loss up to that rounding
    assert out['loss_rank_sort'].item() == pytest.approx(
        ref['loss_rank_sort'].item(), abs=0.02)
    torch.testing.assert_close(half.grad.float(), cls_score.grad,
                               atol=2e-3, rtol=0.1)


@pytest.mark.parametrize('kwargs, param', [
    (dict(delta=0), 'delta'), (dict(delta=-1.0), 'delta'),
    (dict(delta='0.5'), 'delta'), (dict(loss_weight=-2.0), 'loss_weight'),
    (dict(score_space='probability'), 'score_space')])
def test_bad_hyper_parameters_named(kwargs, param):
    with pytest.raises(ValueError, match=f'RankSortLoss: {param}'):
        RankSortLoss(**kwargs)
    with pytest.raises(ValueError, match=f'error_driven_terms: delta'):
        error_driven_terms(torch.zeros(3), torch.ones(3, dtype=torch.bool),
                           0.0)
    with pytest.raises(ValueError, match='mode'):
        error_driven_terms(torch.zeros(3), torch.ones(3, dtype=torch.bool),
                           0.5, 'lrp')


def test_bad_quality_named(rpn_batch):
    cls_score, labels = rpn_batch(10, 3, fg=0.5, seed=2)
    with pytest.raises(ValueError, match='quality must be a float tensor'):
        RankSortLoss()(cls_score, labels, quality=torch.ones(9))
    with pytest.raises(ValueError, match=r'quality must be finite and in'):
        RankSortLoss()(cls_score, labels, quality=torch.full((10, ), 1.5))
    with pytest.raises(ValueError, match="reduction_override='none'"):
        RankSortLoss()(cls_score, labels, reduction_override='none')
