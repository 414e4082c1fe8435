"""Rank & Sort Loss, AP Loss's error-driven update and their shared core.

Values and updates are compared with two references: the authors'
algorithm (``_official_reference``: a loop over the positives as in their
code, every option a parameter), for the defaults and every option value,
and a brute-force implementation of the papers' definitions
(``_error_driven_reference``: loops over all pairs, an explicit matrix of
primary terms), which is the earlier behaviour, reached with the options
``self_relation=1.0``, ``own_loc_in_update=True``, ``loc_order='smoothed'``
(and ``zero_quality_as_negative=False``). The properties every loss has are
in ``test_loss_contract.py``.
"""
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from mmdet.registry import MODELS
from mmdet_rankloss.losses import (ErrorDrivenAPLoss, RankSortLoss,
                                   error_driven_ap_loss, error_driven_loss,
                                   error_driven_terms, rank_sort_loss)
from mmdet_rankloss.losses.error_driven_negatives import (fixed_point,
                                                          prefix_sums)

from _error_driven_reference import reference  # tests/test_losses on sys.path
from _official_reference import (CASES, flat_ranking, official_case,
                                 rank_sort_reference)

MODES = ('ap', 'rs', 'alrp')
#: the options that give the earlier behaviour (the brute-force reference)
EARLIER = dict(self_relation=1.0, own_loc_in_update=True,
               loc_order='smoothed')


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
    terms = error_driven_terms(s, pos, delta, mode, neg, quality, loc_error,
                               **EARLIER)
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
    rank = (0.5 if mode == 'rs' else 1) + hpp.sum(1) + nfp
    assert terms.ranking.item() == pytest.approx(
        (nfp / rank).mean().item(), abs=1e-9)
    if mode == 'alrp':  # the authors': own error left out, gate 1e-5
        ell = (nfp + hpp @ quality.double()) / rank
        w = torch.where(nfp > 1e-5, ell / nfp, torch.zeros_like(nfp))
    else:
        w = torch.where(nfp > 1e-10, 1 / rank, torch.zeros_like(nfp))
    expected = (w[:, None] * h).sum(0) / num_pos
    torch.testing.assert_close(terms.grad[~pos].double(), expected,
                               atol=1e-6, rtol=1e-5)


def test_rs_without_labels_is_ap():
    """With the self relation 1 (AP Loss's rank)."""
    s, pos, neg, _, _ = random_ranking(1)
    rs = error_driven_terms(s, pos, 0.5, 'rs', neg, self_relation=1.0)
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
    earlier = dict(self_relation=1.0, zero_quality_as_negative=False) \
        if mode == 'rs' else {}
    loss = MODELS.build(dict(type=name, loss_weight=2.0, log_diagnostics=True,
                            **earlier))
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
    out = RankSortLoss(log_diagnostics=True)(cls_score, labels)
    assert out['loss_rank_sort'].item() == 0
    out['loss_rank_sort'].backward()
    assert cls_score.grad is not None and not cls_score.grad.any()


def test_all_scores_tied(rpn_batch):
    cls_score, labels = rpn_batch(20, 3, seed=4)
    tied = torch.zeros_like(cls_score, requires_grad=True)
    out = RankSortLoss(log_diagnostics=True)(tied, labels,
                         quality=torch.linspace(0.1, 1, 20))
    out['loss_rank_sort'].backward()
    assert torch.isfinite(tied.grad).all()
    assert tied.grad.sum().abs().item() < 1e-6
    # every pair is a half-relation, the self relation too: ranking error
    # is N_FP / rank with N_FP = |N| / 2 and rank = (|N| + |P|) / 2
    num_pos = int((labels < 3).sum())
    num_neg = 20 * 3 - num_pos
    expected = (num_neg / 2) / ((num_neg + num_pos) / 2)
    assert out['rs_ranking'].item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_half_precision(dtype, rpn_batch):
    cls_score, labels = rpn_batch(40, 4, seed=6)
    quality = torch.rand(40, generator=torch.Generator().manual_seed(1))
    ref = RankSortLoss(log_diagnostics=True)(
        cls_score, labels, quality=quality)
    ref['loss_rank_sort'].backward()
    half = cls_score.detach().to(dtype).requires_grad_(True)
    out = RankSortLoss(log_diagnostics=True)(half, labels, quality=quality)
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
    (dict(score_space='probability'), 'score_space'),
    (dict(self_relation=0.0), 'self_relation'),
    (dict(self_relation=1.5), 'self_relation'),
    (dict(self_relation=True), 'self_relation'),
    (dict(zero_quality_as_negative=1), 'zero_quality_as_negative')])
def test_bad_hyper_parameters_named(kwargs, param):
    with pytest.raises(ValueError, match=f'RankSortLoss: {param}'):
        RankSortLoss(**kwargs)
    with pytest.raises(ValueError, match='error_driven_terms: delta'):
        error_driven_terms(torch.zeros(3), torch.ones(3, dtype=torch.bool),
                           0.0)
    with pytest.raises(ValueError, match='mode'):
        error_driven_terms(torch.zeros(3), torch.ones(3, dtype=torch.bool),
                           0.5, 'lrp')
    for option, value in (('self_relation', 0.0), ('loc_order', 'soft'),
                          ('own_loc_in_update', 'no')):
        with pytest.raises(ValueError, match=f'error_driven_terms: {option}'):
            error_driven_terms(torch.zeros(3),
                               torch.ones(3, dtype=torch.bool), 0.5,
                               **{option: value})


def test_bad_quality_named(rpn_batch):
    cls_score, labels = rpn_batch(10, 3, fg=0.5, seed=2)
    with pytest.raises(ValueError, match='quality must be a float tensor'):
        RankSortLoss()(cls_score, labels, quality=torch.ones(9))
    with pytest.raises(ValueError, match=r'quality must be finite and in'):
        RankSortLoss()(cls_score, labels, quality=torch.full((10, ), 1.5))
    with pytest.raises(ValueError, match="reduction_override='none'"):
        RankSortLoss()(cls_score, labels, reduction_override='none')


# ---- the authors' algorithm (``_official_reference``), every option value

def assert_matches(out, parts, grad, ref, update):
    assert out.item() == pytest.approx(ref['loss'], abs=1e-9)
    assert parts[0].item() == pytest.approx(ref['ranking'], abs=1e-9)
    assert parts[1].item() == pytest.approx(ref['sorting'], abs=1e-9)
    torch.testing.assert_close(grad, update, atol=1e-9, rtol=0)


@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('self_relation', [0.5, 1.0])
@pytest.mark.parametrize('seed', range(3))
def test_rs_core_matches_authors_algorithm(case, self_relation, seed):
    """``error_driven_loss`` (value and backward) against the authors'
    algorithm; a label-0 positive stays a positive here (the core has no
    ``zero_quality_as_negative``: :class:`RankSortLoss` applies it)."""
    s, pos, neg, y = official_case(case, seed)
    x = s.clone().requires_grad_(True)
    kwargs = {} if self_relation == 0.5 else dict(self_relation=1.0)
    loss, parts, _ = error_driven_loss(x, pos, 0.5, 'rs', neg, y, **kwargs)
    loss.backward()
    ref, update = rank_sort_reference(s, pos, y, 0.5, self_relation,
                                      zero_quality_as_negative=False,
                                      negatives=neg)
    assert_matches(loss, parts, x.grad, ref, update)


def rs_module_case(rpn_batch, case, seed=3):
    """A detection batch (N = 16, C = 3) for ``case`` with weights and the
    IoU labels of every row."""
    cls_score, labels = rpn_batch(16, 3, fg=0.45, seed=seed)
    cls_score = cls_score.detach().double()
    if case == 'ties':
        cls_score = (cls_score * 2).round() / 2
    if case == 'one_positive':
        labels[1:] = 3
        labels[0] = 1
    weight = torch.ones(16, dtype=torch.float64)
    weight[[2, 5]] = 0
    quality = torch.rand(16, generator=torch.Generator().manual_seed(seed),
                         dtype=torch.float64)
    if case == 'zero_values':
        quality[(labels < 3).nonzero().squeeze(1)[::2]] = 0
    if case == 'equal_values':
        quality.fill_(0.6)
    return cls_score.requires_grad_(True), labels, weight, quality


@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('self_relation', [0.5, 1.0])
@pytest.mark.parametrize('zero_as_negative', [True, False])
def test_rs_module_matches_authors_algorithm(case, self_relation,
                                             zero_as_negative, rpn_batch):
    cls_score, labels, weight, quality = rs_module_case(rpn_batch, case)
    loss = RankSortLoss(log_diagnostics=True, self_relation=self_relation,
                        zero_quality_as_negative=zero_as_negative,
                        loss_weight=2.0)
    out = loss(cls_score, labels, weight, quality=quality)
    out['loss_rank_sort'].backward()
    scores, pos, neg, rows = flat_ranking(cls_score, labels, weight)
    ref, update = rank_sort_reference(scores, pos, quality[rows], 0.5,
                                      self_relation, zero_as_negative, neg)
    grad = cls_score.grad[:, :3].reshape(-1)
    assert_matches(out['loss_rank_sort'] / 2,
                   torch.stack([out['rs_ranking'], out['rs_sorting']]),
                   grad / 2, ref, update)
    assert not cls_score.grad[:, 3].any()


def test_zero_iou_positive_is_a_negative(rpn_batch):
    """Default: a positive with IoU 0 is ranked and pushed down as a
    negative; with ``zero_quality_as_negative=False`` it is a positive."""
    cls_score, labels, weight, quality = rs_module_case(rpn_batch,
                                                        'zero_values')
    scores, pos, neg, rows = flat_ranking(cls_score, labels, weight)
    zero_rows = rows[quality[rows] == 0]
    assert zero_rows.numel()
    entry = zero_rows * 3 + labels[zero_rows]
    grads = {}
    for flag in (True, False):
        x = cls_score.detach().clone().requires_grad_(True)
        out = RankSortLoss(log_diagnostics=True,
                           zero_quality_as_negative=flag)(
            x, labels, weight, quality=quality)
        out['loss_rank_sort'].backward()
        grads[flag] = x.grad[:, :3].reshape(-1)[entry]
    assert (grads[True] >= 0).all() and grads[True].any()
    assert not torch.equal(grads[True], grads[False])
    # the default equals the same batch with those rows background
    others = labels.clone()
    others[zero_rows] = 3
    out = RankSortLoss(log_diagnostics=True)(
        cls_score.detach(), others, weight,
                         quality=quality)
    ref = RankSortLoss(log_diagnostics=True)(
        cls_score.detach(), labels, weight,
                         quality=quality)
    assert out['loss_rank_sort'].item() == ref['loss_rank_sort'].item()


def module_as_function_inputs(cls_score, labels, weight, quality=None):
    """The module's ranking as the functional forms take it: the (N, C)
    logits, the label's score positive, rows of weight 0 in neither mask,
    a positive of quality 0 a negative (``zero_quality_as_negative``)."""
    num_classes = cls_score.shape[1] - 1
    keep = (weight > 0)[:, None].expand(-1, num_classes)
    positives = torch.nn.functional.one_hot(
        labels, num_classes + 1)[:, :num_classes].bool() & keep
    if quality is not None:
        positives &= (quality > 0)[:, None]
        quality = quality[:, None].expand(-1, num_classes)
    return (cls_score[:, :num_classes], positives, keep & ~positives,
            quality)


@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('name', ['RankSortLoss', 'ErrorDrivenAPLoss'])
def test_function_equals_the_module(case, name, rpn_batch):
    """Same value and update as the module."""
    cls_score, labels, weight, quality = rs_module_case(rpn_batch, case)
    options = dict(delta=0.7) if name == 'RankSortLoss' else {}
    module = MODELS.build(dict(type=name, log_diagnostics=True, **options))
    if name == 'RankSortLoss':
        out = module(cls_score, labels, weight, quality=quality)
        value = out['loss_rank_sort']
    else:
        value = module(cls_score, labels, weight)['loss_ap']
    value.backward()
    x = cls_score.detach().clone().requires_grad_(True)
    scores, positives, negatives, quality = module_as_function_inputs(
        x, labels, weight, quality if name == 'RankSortLoss' else None)
    if name == 'RankSortLoss':
        got = rank_sort_loss(scores, positives, quality, negatives=negatives,
                             **options)
    else:
        got = error_driven_ap_loss(scores, positives, negatives=negatives)
    got.backward()
    assert got.item() == value.item()
    torch.testing.assert_close(x.grad, cls_score.grad, atol=0, rtol=0)


def test_functions_check_their_inputs():
    scores = torch.randn(4, 3)
    positives = torch.rand(4, 3) < 0.5
    with pytest.raises(ValueError, match='rank_sort_loss: delta'):
        rank_sort_loss(scores, positives, delta=0)
    with pytest.raises(ValueError, match='rank_sort_loss: positives'):
        rank_sort_loss(scores, positives[:3])
    with pytest.raises(ValueError, match='rank_sort_loss: quality must be'):
        rank_sort_loss(scores, positives, torch.ones(4))
    with pytest.raises(ValueError, match='quality must be finite and in'):
        rank_sort_loss(scores, positives, torch.full((4, 3), 2.0))
    with pytest.raises(ValueError, match='error_driven_ap_loss: scores'):
        error_driven_ap_loss(scores.masked_fill(positives, float('nan')),
                             positives)


def test_options_default_to_the_authors():
    loss = RankSortLoss(log_diagnostics=True)
    assert loss.self_relation == 0.5 and loss.zero_quality_as_negative
    assert 'self_relation=0.5' in repr(loss)


# ---- determinism on CUDA and the float32 option

def test_prefix_sums_match_cumsum():
    """Fixed-point integer sums (no floating-point ``cumsum`` kernel) equal
    ``torch.cumsum`` to 1e-12 of the running sum of ``|x|``, with leading
    dimensions, in float64 and float32 (there to 1e-6)."""
    gen = torch.Generator().manual_seed(0)
    for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 1e-6)):
        for shape in ((0, ), (1, ), (31, ), (3, 1029), (2, 0), (100_003, )):
            x = torch.randn(shape, generator=gen, dtype=dtype) - 4.6
            got = prefix_sums(x)
            assert got.shape == x.shape and got.dtype == x.dtype
            scale = torch.cumsum(x.abs().double(), -1)
            error = (got.double() - torch.cumsum(x.double(), -1)).abs()
            assert (error <= tol * scale).all()


def test_fixed_point_sums_are_exact_and_odd():
    """Sums that cancel are exactly 0 (the truncation is odd), an all-zero
    row has a finite unit, and no row overflows int64."""
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 1000, generator=gen, dtype=torch.float64) * 1e3
    x[1] = 0
    q, unit = fixed_point(torch.cat([x, -x], 1))
    assert q.dtype == torch.int64 and unit.shape == (3, 1)
    assert (q.sum(1) == 0).all() and torch.isfinite(unit).all()
    assert (unit > 0).all() and (q.abs().sum(1) < 2**62).all()


class _FloatAccumulations(TorchDispatchMode):
    """Records the ops whose float result depends on the order of atomic
    adds on CUDA (``index_add``, ``scatter_add``, ``index_put`` with
    accumulation, ``bincount`` with weights) or that deterministic CUDA
    refuses before torch 2.6 (float ``cumsum``)."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name.split('::')[-1].rstrip('_')
        floating = isinstance(args[0], torch.Tensor) and \
            args[0].is_floating_point()
        if name in ('index_add', 'scatter_add', 'cumsum') and floating:
            self.seen.append(name)
        if name in ('index_put', '_index_put_impl') and floating and (
                kwargs.get('accumulate') or len(args) > 3 and args[3]):
            self.seen.append(name)
        if name == 'bincount' and (len(args) > 1 and args[1] is not None
                                   or kwargs.get('weights') is not None):
            self.seen.append(name)
        return func(*args, **kwargs)


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('precision', ['float64', 'float32'])
def test_core_sums_are_deterministic_on_cuda(mode, precision):
    """No float ``cumsum`` (refused by deterministic CUDA in torch < 2.6)
    and no atomic float accumulation (last bits vary between CUDA runs)
    in the core; two calls agree bit for bit."""
    gen = torch.Generator().manual_seed(1)
    n = 3000
    s = torch.randn(n, generator=gen)
    pos = torch.rand(n, generator=gen) < 0.05
    num_pos = int(pos.sum())
    extra = dict(quality=torch.rand(num_pos, generator=gen),
                 loc_error=torch.rand(num_pos, generator=gen))
    with _FloatAccumulations() as log:
        terms = error_driven_terms(s, pos, 0.5, mode, precision=precision,
                                   **extra)
    assert log.seen == []
    again = error_driven_terms(s, pos, 0.5, mode, precision=precision,
                               **extra)
    assert torch.equal(terms.grad, again.grad)
    assert torch.equal(terms.loss, again.loss)


#: float32 core against float64: value (relative) and update (of its
#: largest entry). Measured at 2e5 and 2e6 scores, 50 and 500 positives
#: (docs/reliability.md): at most 1.1e-7 and 3e-7.
FLOAT32_RTOL = 1e-5


def long_float32_ranking(kind, n=60_000, num_pos=200, seed=7):
    """float32 scores like a head's: 'init' all near the prior logit
    -4.6, 'trained' N(-4, 1.5) with the positives raised by 3."""
    gen = torch.Generator().manual_seed(seed)
    pos = torch.zeros(n, dtype=torch.bool)
    pos[torch.randperm(n, generator=gen)[:num_pos]] = True
    if kind == 'init':
        s = -4.6 + 0.3 * torch.randn(n, generator=gen)
    else:
        s = -4.0 + 1.5 * torch.randn(n, generator=gen)
        s[pos] += 3
    return s, pos, torch.rand(num_pos, generator=gen), \
        torch.rand(num_pos, generator=gen)


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('kind', ['init', 'trained'])
def test_float32_core_matches_float64(mode, kind):
    s, pos, quality, loc_error = long_float32_ranking(kind)
    delta = 0.5 if mode == 'rs' else 1.0
    ref, got = (error_driven_terms(s, pos, delta, mode, quality=quality,
                                   loc_error=loc_error, precision=p)
                for p in ('float64', 'float32'))
    assert ref.loss.dtype == torch.float64
    assert got.loss.dtype == torch.float32
    assert got.grad.dtype == s.dtype
    for name in ('loss', 'ranking', 'sorting', 'loc'):
        assert getattr(got, name).item() == pytest.approx(
            getattr(ref, name).item(), rel=FLOAT32_RTOL, abs=1e-12), name
    largest = ref.grad.abs().max()
    assert (got.grad - ref.grad).abs().max() <= FLOAT32_RTOL * largest
    if mode == 'alrp':
        torch.testing.assert_close(
            got.loc_weight.double(), ref.loc_weight, rtol=0,
            atol=FLOAT32_RTOL * ref.loc_weight.abs().max().item())


@pytest.mark.parametrize('case', CASES)
def test_float32_rs_core_matches_authors_algorithm(case):
    """float32 against the authors' algorithm in float64, at
    :data:`FLOAT32_RTOL` (values and updates here are at most 1)."""
    s, pos, neg, y = official_case(case, seed=1)
    x = s.float().requires_grad_(True)
    loss, parts, _ = error_driven_loss(x, pos, 0.5, 'rs', neg, y,
                                       precision='float32')
    loss.backward()
    ref, update = rank_sort_reference(s.float().double(), pos, y, 0.5, 0.5,
                                      zero_quality_as_negative=False,
                                      negatives=neg)
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(ref['loss'], abs=FLOAT32_RTOL)
    assert parts[1].item() == pytest.approx(ref['sorting'],
                                            abs=FLOAT32_RTOL)
    torch.testing.assert_close(x.grad.double(), update, rtol=0,
                               atol=FLOAT32_RTOL)


@pytest.mark.parametrize('name', ['RankSortLoss', 'ErrorDrivenAPLoss'])
def test_module_precision_option(name, rpn_batch):
    cls_score, labels, weight, quality = rs_module_case(rpn_batch, 'random')
    kwargs = dict(quality=quality) if name == 'RankSortLoss' else {}
    outs, grads = [], []
    for precision in ('float64', 'float32'):
        x = cls_score.detach().float().requires_grad_(True)
        loss = MODELS.build(dict(type=name, precision=precision,
                                log_diagnostics=True))
        assert loss.precision == precision
        assert f'precision={precision!r}' in repr(loss)
        out = loss(x, labels, weight, **kwargs)
        next(iter(out.values())).backward()
        outs.append(out)
        grads.append(x.grad)
    for key, value in outs[0].items():
        assert outs[1][key].item() == pytest.approx(value.item(),
                                                    abs=FLOAT32_RTOL)
    torch.testing.assert_close(grads[1], grads[0], rtol=0,
                               atol=FLOAT32_RTOL)
    assert MODELS.build(dict(type=name)).precision == 'float64'
    for bad in ('float16', 'double', torch.float32, None):
        with pytest.raises(ValueError, match=f'{name}: precision'):
            MODELS.build(dict(type=name, precision=bad))
    with pytest.raises(ValueError, match='error_driven_terms: precision'):
        error_driven_terms(torch.zeros(3), torch.ones(3, dtype=torch.bool),
                           0.5, precision='fp32')
