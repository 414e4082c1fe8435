"""Tests of the SoDeep losses: exact limits, Eq. 7 / 9-10, sorter handling."""
import pytest
import torch
import torch.nn.functional as F

from mmdet.registry import MODELS
from mmdet_rankloss.losses.sodeep_loss import (SoDeepAPLoss, SoDeepRecallLoss,
                                               SoDeepSpearmanLoss,
                                               average_ranks)
from mmdet_rankloss.networks.sorters import LSTMSorter, save_sorter

SHARP = 1e7  # a handcrafted sorter this sharp gives the exact ranks


def sharp(seq_len):
    return dict(type='HandcraftedSorter', seq_len=seq_len, lambda_val=SHARP)


def exact_rows(x, y):
    """Per query: (descending ranks among the other items, same-class)."""
    sims = (x @ x.t()).tolist()
    out = []
    for i in range(len(y)):
        others = [j for j in range(len(y)) if j != i]
        ranks = {j: 1 + sum(1 for k in others if sims[i][k] > sims[i][j])
                 for j in others}
        out.append([(ranks[j], bool(y[j] == y[i])) for j in others])
    return out


def test_spearman_loss_is_one_minus_scipy_spearman():
    stats = pytest.importorskip('scipy.stats')
    torch.manual_seed(0)
    pred = torch.randn(5, 12, dtype=torch.float64)
    target = torch.randn(5, 12, dtype=torch.float64)
    loss = SoDeepSpearmanLoss(sorter=sharp(12))(pred, target)
    expected = sum(1 - stats.spearmanr(p, t).statistic
                   for p, t in zip(pred.numpy(), target.numpy())) / 5
    assert loss.item() == pytest.approx(expected, abs=1e-3)
    same = SoDeepSpearmanLoss(sorter=sharp(12))(target[1:], target[1:])
    reverse = SoDeepSpearmanLoss(sorter=sharp(12))(-target[1:], target[1:])
    assert same.item() == pytest.approx(0, abs=1e-9)
    assert reverse.item() == pytest.approx(2, abs=1e-9)


def test_average_ranks_ties():
    torch.testing.assert_close(
        average_ranks(torch.tensor([1.0, 3.0, 1.0, 0.0])),
        torch.tensor([2.5, 1.0, 2.5, 4.0]))


def test_ap_loss_is_eq7_on_exact_ranks(batch):
    x, y = batch(9, 3, seed=1)
    y[0] = 7  # a query without positives is skipped
    per_query = []
    for row in exact_rows(x, y):
        pos = [r for r, same in row if same]
        if pos:
            per_query.append(sum(pos) / len(pos) / 8)
    loss = SoDeepAPLoss(sorter=sharp(8))(x, y)
    assert loss.item() == pytest.approx(sum(per_query) / len(per_query))


@pytest.mark.parametrize('margin', [0.0, 1.0, 2.5])
def test_recall_loss_is_eq9_10_with_hard_negatives(margin, batch):
    x, y = batch(10, 3, seed=2)
    per_query = []
    for row in exact_rows(x, y):
        pos = [r for r, same in row if same]
        neg = [r for r, same in row if not same]
        if pos and neg:
            hinge = [max(0.0, (margin + p - min(neg)) / 9) for p in pos]
            per_query.append(sum(hinge) / len(hinge))
    loss = SoDeepRecallLoss(sorter=sharp(9), margin=margin)(x, y)
    assert loss.item() == pytest.approx(sum(per_query) / len(per_query))


def test_row_length_must_match_the_sorter_or_be_padded(batch):
    x, y = batch(9, 3, seed=3)
    with pytest.raises(ValueError, match='seq_len=100.*length 8'):
        SoDeepAPLoss()(x, y)  # default sorter: seq_len 100
    # padding with a value below every cosine gives the unpadded result
    for cls in (SoDeepAPLoss, SoDeepRecallLoss):
        padded = cls(sorter=dict(type='HandcraftedSorter', seq_len=20),
                     pad_value=-3.0)(x, y)
        exact = cls(sorter=dict(type='HandcraftedSorter', seq_len=8))(x, y)
        assert padded.item() == pytest.approx(exact.item(), rel=1e-6)
    with pytest.raises(ValueError, match='length 8'):
        SoDeepAPLoss(sorter=dict(type='HandcraftedSorter', seq_len=5),
                     pad_value=-3.0)(x, y)


def test_frozen_and_finetuned_learned_sorter(tmp_path, batch):
    path = tmp_path / 'lstm.pth'
    save_sorter(LSTMSorter(7, 8, 1), str(path))
    x, y = batch(8, 2, dtype=torch.float32, seed=4)
    frozen = MODELS.build(dict(type='SoDeepRecallLoss', checkpoint=str(path)))
    frozen.train()
    assert not frozen.sorter.training
    assert not any(p.requires_grad for p in frozen.sorter.parameters())
    xg = x.clone().requires_grad_(True)
    frozen(xg, y).backward()
    assert xg.grad.abs().sum() > 0  # the model still gets a gradient
    tuned = SoDeepAPLoss(checkpoint=str(path), finetune_sorter=True).train()
    assert tuned.sorter.training
    tuned(x, y).backward()
    assert all(p.grad is not None for p in tuned.sorter.parameters())


def test_gradcheck_float64_through_the_handcrafted_sorter(batch):
    x, y = batch(7, 2, d=4, seed=5)
    x.requires_grad_(True)
    sorter = dict(type='HandcraftedSorter', seq_len=6, lambda_val=4.0)
    for loss in (SoDeepAPLoss(sorter=sorter),
                 SoDeepRecallLoss(sorter=sorter, margin=3.0)):
        assert torch.autograd.gradcheck(
            lambda v: loss(F.normalize(v, dim=1), y), (x, ))
    pred = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
    target = torch.randn(3, 6, dtype=torch.float64)
    assert torch.autograd.gradcheck(
        lambda v: SoDeepSpearmanLoss(sorter=sorter)(v, target), (pred, ))


@pytest.mark.parametrize('cls', [SoDeepAPLoss, SoDeepRecallLoss])
def test_no_positive_gives_zero_with_graph(cls, batch):
    x, _ = batch(5, 2)
    x.requires_grad_(True)
    loss = cls(sorter=dict(type='HandcraftedSorter', seq_len=4))(
        x, torch.arange(5))
    loss.backward()
    assert loss.item() == 0 and torch.equal(x.grad, torch.zeros_like(x))
    one = cls(sorter=dict(type='HandcraftedSorter', seq_len=4))(
        x[:1], torch.zeros(1, dtype=torch.long))
    assert one.item() == 0


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_half_precision(dtype, batch):
    x, y = batch(11, 3, dtype=torch.float32, seed=6)
    xh = x.to(dtype).requires_grad_(True)
    loss = SoDeepRecallLoss(sorter=dict(type='LSTMSorter', seq_len=10,
                                        hidden_size=8))(xh, y)
    assert loss.dtype == torch.float32 and bool(torch.isfinite(loss))
    loss.backward()
    assert xh.grad.dtype == dtype and bool(torch.isfinite(xh.grad).all())


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match='same shape'):
        SoDeepSpearmanLoss()(torch.zeros(2, 100), torch.zeros(2, 99))
    with pytest.raises(ValueError, match='d >= 2'):
        SoDeepSpearmanLoss(sorter=dict(type='HandcraftedSorter',
                                       seq_len=1))(torch.zeros(2, 1),
                                                   torch.zeros(2, 1))
    with pytest.raises(ValueError, match='margin'):
        SoDeepRecallLoss(margin=-1)
    with pytest.raises(ValueError, match='labels'):
        SoDeepAPLoss()(torch.zeros(3, 2), torch.zeros(2, dtype=torch.long))
