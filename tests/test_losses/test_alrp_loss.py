"""aLRP Loss: value, error-driven update and localisation weights against
the authors' algorithm (``_official_reference``, every option value) and,
with the options of the earlier behaviour, the brute-force reference of the
paper; and the self-balance (SB) weight."""
import logging
from types import SimpleNamespace

import pytest
import torch

from mmdet.registry import HOOKS, MODELS
from mmdet_rankloss.losses import ALRPLoss, alrp_loss, error_driven_loss

from _error_driven_reference import reference  # tests/test_losses on path
from _official_reference import (CASES, alrp_reference, flat_ranking,
                                 official_case)


def alrp_batch(rpn_batch, seed=3):
    cls_score, labels = rpn_batch(14, 3, fg=0.4, seed=seed)
    cls_score = cls_score.detach().double().requires_grad_(True)
    gen = torch.Generator().manual_seed(seed)
    loc_error = torch.rand(14, generator=gen,
                           dtype=torch.float64).requires_grad_(True)
    return cls_score, labels, loc_error


def test_module_matches_reference(rpn_batch):
    """The earlier behaviour (the paper's definitions) is the options
    ``tau=0, own_loc_in_update=True, loc_order='smoothed'``."""
    cls_score, labels, loc_error = alrp_batch(rpn_batch)
    loss = ALRPLoss(log_diagnostics=True,
                    sb_weight=3.0, tau=0.0, own_loc_in_update=True,
                    loc_order='smoothed')
    out = loss(cls_score, labels, loc_error=loc_error)
    (out['loss_alrp_cls'] + out['loss_alrp_loc']).backward()
    scores, pos, _, rows = flat_ranking(cls_score, labels)
    values, update, _ = reference(scores, pos, 1.0, 'alrp',
                                  loc_error=loc_error[rows].detach())
    assert out['loss_alrp_cls'].item() == pytest.approx(values['ranking'],
                                                        abs=1e-12)
    assert out['loss_alrp_loc'].item() == pytest.approx(3 * values['loc'],
                                                        abs=1e-12)
    torch.testing.assert_close(cls_score.grad[:, :3].reshape(-1), update)
    assert not cls_score.grad[:, 3].any()
    # the box branch: d(w_sb L_loc)/de at the positives, nothing elsewhere
    expected = torch.zeros(14, dtype=torch.float64)
    expected[rows] = 3 * values['loc_weight']
    torch.testing.assert_close(loc_error.grad, expected)


def test_without_loc_errors_the_update_is_ap_losss(rpn_batch):
    cls_score, labels, _ = alrp_batch(rpn_batch, seed=4)
    out = ALRPLoss(log_diagnostics=True)(cls_score, labels)
    out['loss_alrp_cls'].backward()
    grad = cls_score.grad.clone()
    cls_score.grad = None
    MODELS.build(dict(type='ErrorDrivenAPLoss'))(cls_score,
                                                 labels).backward()
    torch.testing.assert_close(grad, cls_score.grad)
    assert out['loss_alrp_loc'].item() == 0


@pytest.mark.parametrize('options', [
    {}, dict(tau=0.0, own_loc_in_update=True, loc_order='smoothed',
             sb_weight=3.0, delta=0.8)])
def test_function_equals_the_module(options, rpn_batch):
    """Same value (L_cls + w_sb L_loc) and gradients, of the scores (the
    update) and of the localisation errors."""
    cls_score, labels, loc_error = alrp_batch(rpn_batch)
    weight = torch.ones(14, dtype=torch.float64)
    weight[[0, 5]] = 0
    out = ALRPLoss(log_diagnostics=True,
                   **options)(cls_score, labels, weight, loc_error=loc_error)
    value = out['loss_alrp_cls'] + out['loss_alrp_loc']
    value.backward()
    x = cls_score.detach().clone().requires_grad_(True)
    e = loc_error.detach().clone().requires_grad_(True)
    keep = (weight > 0)[:, None].expand(-1, 3)
    positives = torch.nn.functional.one_hot(labels, 4)[:, :3].bool() & keep
    got = alrp_loss(x[:, :3], positives, e[:, None].expand(-1, 3),
                    negatives=keep & ~positives, **options)
    got.backward()
    assert got.item() == pytest.approx(value.item(), rel=1e-15)
    torch.testing.assert_close(x.grad, cls_score.grad, atol=0, rtol=0)
    torch.testing.assert_close(e.grad, loc_error.grad, atol=1e-15, rtol=0)
    with pytest.raises(ValueError, match='alrp_loss: tau'):
        alrp_loss(x[:, :3], positives, tau=1.0)


def test_defaults_are_the_papers():
    loss = ALRPLoss()
    assert loss.delta == 1.0 and float(loss.sb_weight) == 50.0
    assert 'sb_weight' in loss.state_dict()  # restored on resume


def test_self_balance_is_the_epoch_mean_ratio(rpn_batch):
    loss = ALRPLoss(log_diagnostics=True).train()
    totals, locs = [], []
    for seed in (1, 2, 3):
        cls_score, labels, loc_error = alrp_batch(rpn_batch, seed)
        out = loss(cls_score, labels, loc_error=loc_error)
        loc = out['loss_alrp_loc'].item() / 50.0
        totals.append(out['loss_alrp_cls'].item() + loc)
        locs.append(loc)
    runner = SimpleNamespace(model=torch.nn.Sequential(loss),
                             logger=logging.getLogger('test'))
    HOOKS.build(dict(type='ALRPSelfBalanceHook',
                     period='epoch')).after_train_epoch(runner)
    assert float(loss.sb_weight) == pytest.approx(sum(totals) / sum(locs))
    assert not loss._sb_sums.any()  # a new epoch starts from zero
    # eval calls and self_balance=False leave the weight alone
    frozen = ALRPLoss(log_diagnostics=True, self_balance=False).train()
    frozen(*alrp_batch(rpn_batch)[:2], loc_error=alrp_batch(rpn_batch)[2])
    assert frozen.update_self_balance() is None
    assert float(frozen.sb_weight) == 50.0


def test_bad_inputs_named(rpn_batch):
    cls_score, labels, loc_error = alrp_batch(rpn_batch)
    with pytest.raises(ValueError, match='loc_error must be finite'):
        ALRPLoss()(cls_score, labels, loc_error=loc_error.detach() + 2)
    with pytest.raises(ValueError, match='ALRPLoss: sb_weight'):
        ALRPLoss(sb_weight=0.0)
    with pytest.raises(ValueError, match='ALRPLoss: self_balance'):
        ALRPLoss(self_balance='yes')
    for option, value in (('tau', 1.0), ('tau', -0.1), ('tau', True),
                          ('own_loc_in_update', 1),
                          ('loc_order', 'sorted')):
        with pytest.raises(ValueError, match=f'ALRPLoss: {option}'):
            ALRPLoss(**{option: value})


# ---- the authors' algorithm (``_official_reference``), every option value

OPTIONS = [dict(own_loc_in_update=own, loc_order=order)
           for own in (False, True) for order in ('hard', 'smoothed')]


@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('options', OPTIONS)
@pytest.mark.parametrize('seed', range(3))
def test_core_matches_authors_algorithm(case, options, seed):
    """``error_driven_loss`` (value, backward, localisation weights)
    against the authors' algorithm. With ties the hard order follows the
    documented rule (lower index above), which the reference applies."""
    s, pos, neg, e = official_case(case, seed, equal=0.4)
    x = s.clone().requires_grad_(True)
    loss, parts, loc_weight = error_driven_loss(x, pos, 1.0, 'alrp', neg,
                                                loc_error=e, **options)
    loss.backward()
    ref, update = alrp_reference(s, pos, e, 1.0, negatives=neg, **options)
    assert loss.item() == pytest.approx(ref['cls'], abs=1e-9)
    assert parts[0].item() == pytest.approx(ref['cls'], abs=1e-9)
    assert parts[2].item() == pytest.approx(ref['loc'], abs=1e-9)
    torch.testing.assert_close(x.grad, update, atol=1e-9, rtol=0)
    torch.testing.assert_close(loc_weight, ref['loc_weight'], atol=1e-9,
                               rtol=0)


def module_case(rpn_batch, case, seed=3):
    cls_score, labels, loc_error = alrp_batch(rpn_batch, seed)
    cls_score = cls_score.detach()
    if case == 'ties':
        cls_score = (cls_score * 2).round() / 2
    if case == 'one_positive':
        labels[1:] = 3
        labels[0] = 2
    loc_error = loc_error.detach()
    if case == 'zero_values':
        loc_error[::3] = 0
    if case == 'equal_values':
        loc_error = torch.full_like(loc_error, 0.4)
    weight = torch.ones(14, dtype=torch.float64)
    weight[[3, 6]] = 0
    return (cls_score.requires_grad_(True), labels, weight,
            loc_error.requires_grad_(True))


@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('options', OPTIONS)
@pytest.mark.parametrize('tau', [0.5, 0.0])
def test_module_matches_authors_algorithm(case, options, tau, rpn_batch):
    """:class:`ALRPLoss` (both outputs, the scores' and the errors'
    gradients) against the authors' algorithm, for every option value."""
    cls_score, labels, weight, loc_error = module_case(rpn_batch, case)
    loss = ALRPLoss(log_diagnostics=True,
                    sb_weight=3.0, loss_weight=2.0, tau=tau, **options)
    out = loss(cls_score, labels, weight, loc_error=loc_error)
    (out['loss_alrp_cls'] + out['loss_alrp_loc']).backward()
    scores, pos, neg, rows = flat_ranking(cls_score, labels, weight)
    ref, update = alrp_reference(scores, pos, loc_error[rows].detach(), 1.0,
                                 tau=tau, negatives=neg, **options)
    assert out['loss_alrp_cls'].item() == pytest.approx(2 * ref['cls'],
                                                        abs=1e-9)
    assert out['loss_alrp_loc'].item() == pytest.approx(6 * ref['loc'],
                                                        abs=1e-9)
    torch.testing.assert_close(cls_score.grad[:, :3].reshape(-1),
                               2 * update, atol=1e-9, rtol=0)
    expected = torch.zeros(14, dtype=torch.float64)
    expected[rows] = 6 * ref['loc_weight']
    torch.testing.assert_close(loc_error.grad, expected, atol=1e-9, rtol=0)


def test_hard_order_breaks_ties_by_index():
    """Two tied positives: the lower index ranks above the other, so its
    error enters both positives' ``E_loc`` and the other's only its own."""
    s = torch.tensor([0.3, 2.0, 0.3, -1.0, 0.8], dtype=torch.float64)
    pos = torch.tensor([True, False, True, False, False])
    e = torch.tensor([0.2, 0.7], dtype=torch.float64)
    terms = error_driven_loss(s, pos, 1.0, 'alrp', loc_error=e)
    rank = 1 + 0.5 + (1.0 + 0.0 + 0.75)  # the two ranks are equal
    assert terms[1][2].item() == pytest.approx(
        (0.2 / rank + (0.2 + 0.7) / rank) / 2, abs=1e-12)
    torch.testing.assert_close(
        terms[2], torch.tensor([2 / rank, 1 / rank],
                               dtype=torch.float64) / 2)
    # swapped errors: the first positive (index 0) is still the one above
    swapped = error_driven_loss(s, pos, 1.0, 'alrp', loc_error=e.flip(0))
    torch.testing.assert_close(swapped[2], terms[2])


def test_loc_errors_divided_by_one_minus_tau(rpn_batch):
    """``tau`` only rescales the errors: tau = 0.5 on ``e / 2`` is tau = 0
    on ``e``; the input check is on the errors as given."""
    cls_score, labels, weight, loc_error = module_case(rpn_batch, 'random')
    half = ALRPLoss(log_diagnostics=True,
                    sb_weight=1.0)(cls_score, labels, weight,
                                   loc_error=loc_error.detach() / 2)
    plain = ALRPLoss(log_diagnostics=True,
                     sb_weight=1.0, tau=0.0)(cls_score, labels, weight,
                                             loc_error=loc_error)
    for key in ('loss_alrp_cls', 'loss_alrp_loc'):
        assert half[key].item() == pytest.approx(plain[key].item(),
                                                 abs=1e-12)
    ALRPLoss(log_diagnostics=True, tau=0.9)(cls_score, labels, weight,
                      loc_error=torch.ones_like(loc_error))


def test_options_default_to_the_authors():
    loss = ALRPLoss(log_diagnostics=True)
    assert loss.tau == 0.5 and not loss.own_loc_in_update
    assert loss.loc_order == 'hard'
    assert "loc_order='hard'" in repr(loss)


#: float32 core against the float64 reference: values and updates are at
#: most a few units here (test_rank_sort_loss.py measures long rankings)
FLOAT32_ATOL = 1e-5


@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('options', OPTIONS)
def test_float32_module_matches_authors_algorithm(case, options, rpn_batch):
    """``precision='float32'`` on float32 scores and errors against the
    authors' algorithm in float64, at :data:`FLOAT32_ATOL`."""
    cls_score, labels, weight, loc_error = module_case(rpn_batch, case)
    cls_score = cls_score.detach().float().requires_grad_(True)
    loc_error = loc_error.detach().float().requires_grad_(True)
    loss = ALRPLoss(log_diagnostics=True,
                    sb_weight=3.0, precision='float32', **options)
    assert loss.precision == 'float32' and "precision='float32'" in repr(
        loss)
    out = loss(cls_score, labels, weight, loc_error=loc_error)
    (out['loss_alrp_cls'] + out['loss_alrp_loc']).backward()
    scores, pos, neg, rows = flat_ranking(cls_score.double(), labels,
                                          weight)
    ref, update = alrp_reference(scores, pos,
                                 loc_error[rows].detach().double(), 1.0,
                                 tau=0.5, negatives=neg, **options)
    assert out['loss_alrp_cls'].dtype == torch.float32
    assert out['loss_alrp_cls'].item() == pytest.approx(ref['cls'],
                                                        abs=FLOAT32_ATOL)
    assert out['loss_alrp_loc'].item() == pytest.approx(3 * ref['loc'],
                                                        abs=FLOAT32_ATOL)
    torch.testing.assert_close(cls_score.grad[:, :3].reshape(-1).double(),
                               update, atol=FLOAT32_ATOL, rtol=0)
    expected = torch.zeros(14, dtype=torch.float64)
    expected[rows] = 3 * ref['loc_weight']
    torch.testing.assert_close(loc_error.grad.double(), expected,
                               atol=FLOAT32_ATOL, rtol=0)


def test_precision_defaults_to_float64_and_is_checked():
    assert ALRPLoss().precision == 'float64'
    for bad in ('float16', 'fp32', 64):
        with pytest.raises(ValueError, match='ALRPLoss: precision'):
            ALRPLoss(precision=bad)
