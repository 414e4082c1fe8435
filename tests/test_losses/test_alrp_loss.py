"""aLRP Loss: value, error-driven update and localisation weights against
the brute-force reference of the paper, and the self-balance (SB) weight."""
import logging
from types import SimpleNamespace

import pytest
import torch

from mmdet.registry import HOOKS, MODELS
from mmdet_rankloss.losses import ALRPLoss

from _error_driven_reference import reference  # tests/test_losses on path


def alrp_batch(rpn_batch, seed=3):
    cls_score, labels = rpn_batch(14, 3, fg=0.4, seed=seed)
    cls_score = cls_score.detach().double().requires_grad_(True)
    gen = torch.Generator().manual_seed(seed)
    loc_error = torch.rand(14, generator=gen,
                           dtype=torch.float64).requires_grad_(True)
    return cls_score, labels, loc_error


def test_module_matches_reference(rpn_batch):
    cls_score, labels, loc_error = alrp_batch(rpn_batch)
    loss = ALRPLoss(sb_weight=3.0)
    out = loss(cls_score, labels, loc_error=loc_error)
    (out['loss_alrp_cls'] + out['loss_alrp_loc']).backward()
    scores = cls_score.detach()[:, :3]
    pos = torch.zeros_like(scores, dtype=torch.bool)
    rows = (labels < 3).nonzero().squeeze(1)
    pos[rows, labels[rows]] = True
    values, update, _ = reference(scores.reshape(-1), pos.reshape(-1), 1.0,
                                  'alrp', loc_error=loc_error[rows].detach())
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
    out = ALRPLoss()(cls_score, labels)
    out['loss_alrp_cls'].backward()
    grad = cls_score.grad.clone()
    cls_score.grad = None
    MODELS.build(dict(type='ErrorDrivenAPLoss'))(cls_score,
                                                 labels)['loss_ap'].backward()
    torch.testing.assert_close(grad, cls_score.grad)
    assert out['loss_alrp_loc'].item() == 0


def test_defaults_are_the_papers():
    loss = ALRPLoss()
    assert loss.delta == 1.0 and float(loss.sb_weight) == 50.0
    assert 'sb_weight' in loss.state_dict()  # restored on resume


def test_self_balance_is_the_epoch_mean_ratio(rpn_batch):
    loss = ALRPLoss().train()
    totals, locs = [], []
    for seed in (1, 2, 3):
        cls_score, labels, loc_error = alrp_batch(rpn_batch, seed)
        out = loss(cls_score, labels, loc_error=loc_error)
        loc = out['loss_alrp_loc'].item() / 50.0
        totals.append(out['loss_alrp_cls'].item() + loc)
        locs.append(loc)
    runner = SimpleNamespace(model=torch.nn.Sequential(loss),
                             logger=logging.getLogger('test'))
    HOOKS.build(dict(type='ALRPSelfBalanceHook')).after_train_epoch(runner)
    assert float(loss.sb_weight) == pytest.approx(sum(totals) / sum(locs))
    assert not loss._sb_sums.any()  # a new epoch starts from zero
    # eval calls and self_balance=False leave the weight alone
    frozen = ALRPLoss(self_balance=False).train()
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
