"""Tests of the RaMBO recall loss: closed form, memory, gradients, contract."""
import math

import pytest
import torch
import torch.nn.functional as F

from mmdet.registry import MODELS
from mmdet_rankloss.losses import (RaMBORecallLoss, rambo_recall_loss,
                                   recall_rank_weight, retrieval_pairs)

DEVICES = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])
W = {
    'log': lambda r: math.log1p(r),
    'loglog': lambda r: math.log1p(math.log1p(r)),
}


def beaten_counts(scores, positives, valid, margin):
    """r_i of Eq. 17 by brute force: valid negatives ranked above i.

    Scores are shifted by Eq. 14 and ties go to the lower index, as in the
    package's ranking. Returns one list of counts per row (empty: no
    positive).
    """
    rows = []
    for q in range(scores.shape[0]):
        s = [float(x) for x in scores[q].detach()]
        shifted = [
            s[j] - margin / 2 if positives[q, j] else s[j] + margin / 2
            for j in range(len(s))
        ]
        counts = []
        for i in range(len(s)):
            if not (valid[q, i] and positives[q, i]):
                continue
            counts.append(
                sum(1 for j in range(len(s))
                    if valid[q, j] and not positives[q, j] and (
                        shifted[j] > shifted[i] or
                        (shifted[j] == shifted[i] and j < i))))
        rows.append(counts)
    return rows


def brute_loss(scores, positives, valid, margin, weighting='log'):
    """Proposition 2: mean over rows with positives of mean W(r_i)."""
    per_row = [
        sum(W[weighting](r) for r in counts) / len(counts)
        for counts in beaten_counts(scores, positives, valid, margin)
        if counts
    ]
    return sum(per_row) / len(per_row) if per_row else 0.0


def eq19_loss(scores, positives, valid, margin, weighting='log'):
    """Eq. 19 directly: sum_K w_K (1 - refined recall@K), averaged."""

    def w(k):
        if weighting == 'log':
            return math.log(1 + 1 / k)
        return math.log(1 + math.log(1 + 1 / k) / (1 + math.log(k)))

    per_row = []
    for counts in beaten_counts(scores, positives, valid, margin):
        if counts:
            top = max(counts) + 1
            per_row.append(
                sum(w(k) * sum(r >= k for r in counts) / len(counts)
                    for k in range(1, top + 1)))
    return sum(per_row) / len(per_row)


def random_problem(q=6, n=11, seed=0, integer=False, device='cpu'):
    gen = torch.Generator().manual_seed(seed)
    if integer:  # many ties
        scores = torch.randint(-3, 4, (q, n), generator=gen).double() / 4
    else:
        scores = torch.randn(q, n, generator=gen, dtype=torch.float64)
    positives = torch.rand(q, n, generator=gen) < 0.3
    valid = torch.rand(q, n, generator=gen) < 0.85
    if q > 1:
        positives[0] = False  # a row without positives
        positives[1, :2] = True
        valid[1, :2] = True
    return (scores.to(device).requires_grad_(True), positives.to(device),
            valid.to(device))


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('weighting', ['log', 'loglog'])
@pytest.mark.parametrize('normalize', [True, False])
@pytest.mark.parametrize('integer', [False, True])
@pytest.mark.parametrize('shape', [(6, 11), (9, 4), (1, 30)])
def test_value_is_proposition_2_closed_form(device, weighting, normalize,
                                            integer, shape):
    scores, positives, valid = random_problem(
        *shape, seed=shape[1], integer=integer, device=device)
    positives[0, 0] = True  # at least one row has a positive
    valid[0, 0] = True
    margin = 0.5  # exact in binary: shifted ties stay ties
    loss = rambo_recall_loss(
        scores,
        positives,
        valid,
        lambda_val=1.0,
        margin=margin,
        weighting=weighting,
        normalize_ranks=normalize)
    expected = brute_loss(scores.cpu(), positives.cpu(), valid.cpu(), margin,
                          weighting)
    assert loss.item() == pytest.approx(expected, abs=1e-12)
    # Eq. 19 (the weighted sum over K) equals the closed form.
    assert expected == pytest.approx(
        eq19_loss(scores.cpu(), positives.cpu(), valid.cpu(), margin,
                  weighting),
        abs=1e-9)


def test_docstring_example_and_weights():
    scores = torch.tensor([[0.9, 0.8, 0.7, 0.6]], requires_grad=True)
    positives = torch.tensor([[0, 1, 0, 1]])
    loss = rambo_recall_loss(scores, positives, margin=0.0)
    assert loss.item() == pytest.approx((math.log(2) + math.log(3)) / 2)
    r = torch.tensor([0., 1., 5.])
    assert torch.allclose(recall_rank_weight(r, 'log'), torch.log1p(r))
    assert torch.allclose(
        recall_rank_weight(r, 'loglog'), torch.log1p(torch.log1p(r)))
    with pytest.raises(ValueError, match='weighting'):
        recall_rank_weight(r, 'sqrt')


def test_margin_counts_near_ties_as_beaten():
    scores = torch.tensor([[0.50, 0.49]])  # positive 0 leads by 0.01 only
    positives = torch.tensor([[True, False]])
    assert rambo_recall_loss(scores, positives, margin=0.0).item() == 0
    assert rambo_recall_loss(
        scores, positives, margin=0.02).item() == pytest.approx(math.log(2))


@pytest.mark.parametrize('device', DEVICES)
def test_rows_without_positives_and_empty(device):
    scores = torch.randn(3, 5, device=device, requires_grad=True)
    none = torch.zeros(3, 5, dtype=torch.bool, device=device)
    loss = rambo_recall_loss(scores, none)
    loss.backward()
    assert loss.item() == 0 and torch.equal(scores.grad,
                                            torch.zeros_like(scores))
    # a row without positives does not change the mean of the others
    positives = none.clone()
    positives[1, 2] = True
    only_row = rambo_recall_loss(scores[1:2], positives[1:2])
    assert rambo_recall_loss(scores, positives).item() == pytest.approx(
        only_row.item())
    # a positive that is not valid does not count
    valid = torch.ones_like(positives)
    valid[1, 2] = False
    assert rambo_recall_loss(scores, positives, valid).item() == 0


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('normalize', [True, False])
def test_gradient_signs(device, normalize):
    scores, positives, valid = random_problem(8, 20, seed=3, device=device)
    loss = rambo_recall_loss(
        scores,
        positives,
        valid,
        lambda_val=50.0,
        margin=0.1,
        normalize_ranks=normalize)
    loss.backward()
    grad = scores.grad
    assert bool((grad[positives & valid] <= 0).all())  # pushed up
    assert bool((grad[~positives & valid] >= 0).all())  # pushed down
    assert bool((grad[~valid] == 0).all())
    assert bool((grad[0] == 0).all())  # the row without positives
    assert bool((grad[positives & valid] < 0).any())
    # descending the gradient lowers the loss
    with torch.no_grad():
        stepped = scores - 0.05 * grad / grad.abs().max()
    assert rambo_recall_loss(stepped, positives, valid,
                             margin=0.1).item() < loss.item()


@pytest.mark.parametrize('device', DEVICES)
def test_immune_to_upstream_scaling(device):
    scores, positives, valid = random_problem(8, 20, seed=4, device=device)
    rambo_recall_loss(scores, positives, valid, lambda_val=2.0).backward()
    grad = scores.grad.clone()
    scores.grad = None
    (1024 * rambo_recall_loss(scores, positives, valid,
                              lambda_val=2.0)).backward()
    assert torch.allclose(scores.grad, 1024 * grad)
    module = RaMBORecallLoss(loss_weight=1024)
    emb = F.normalize(torch.randn(12, 5, dtype=torch.float64), dim=1)
    emb = emb.to(device).requires_grad_(True)
    labels = torch.arange(12, device=device) % 3
    module(emb, labels).backward()
    scaled = emb.grad.clone()
    emb.grad = None
    RaMBORecallLoss()(emb, labels).backward()
    assert torch.allclose(scaled, 1024 * emb.grad)


def test_invalid_arguments():
    scores = torch.randn(2, 3)
    positives = torch.ones(2, 3, dtype=torch.bool)
    for kwargs, match in (
        (dict(lambda_val=0.0), 'lambda_val'),
        (dict(margin=-0.1), 'margin'),
        (dict(weighting='cube'), 'weighting'),
        (dict(reduction='none'), 'reduction'),
    ):
        with pytest.raises(ValueError, match=match):
            rambo_recall_loss(scores, positives, **kwargs)
    with pytest.raises(ValueError, match='positives'):
        rambo_recall_loss(scores, positives[:, :2])
    with pytest.raises(ValueError, match='binary'):
        rambo_recall_loss(scores, positives.long() * 2)
    with pytest.raises(ValueError, match='NaN'):
        rambo_recall_loss(scores.masked_fill(positives, float('nan')),
                          positives)
    with pytest.raises(ValueError, match=r'\(Q, N\)'):
        rambo_recall_loss(torch.randn(3), positives[0])
    with pytest.raises(ValueError, match='memory'):
        RaMBORecallLoss(memory=-1)
    loss = RaMBORecallLoss()
    with pytest.raises(ValueError, match='labels'):
        loss(torch.randn(4, 3), torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match='integer'):
        loss(torch.randn(4, 3), torch.zeros(4))
    with pytest.raises(ValueError, match=r'\(B, D\)'):
        loss(torch.randn(4), torch.zeros(4, dtype=torch.long))


def module_brute(embeddings, labels, ref, ref_labels, margin, weighting):
    """The module's loss by brute force over batch + reference columns."""
    gallery = torch.cat([embeddings, ref]) if ref is not None else embeddings
    glabels = torch.cat([labels, ref_labels]) if ref is not None else labels
    scores = embeddings.double() @ gallery.double().t()
    positives = labels[:, None] == glabels[None, :]
    valid = torch.ones_like(positives)
    valid[:, :len(labels)].fill_diagonal_(False)
    return brute_loss(scores, positives & valid, valid, margin, weighting)


@pytest.mark.parametrize('weighting', ['log', 'loglog'])
@pytest.mark.parametrize('normalize', [True, False])
def test_module_batch_and_memory_exact(weighting, normalize):
    torch.manual_seed(0)
    module = RaMBORecallLoss(memory=2, margin=0.5, weighting=weighting,
                             normalize_ranks=normalize)
    module.train()
    batches, grads = [], []
    for step in range(4):
        emb = F.normalize(torch.randn(10, 6, dtype=torch.float64), dim=1)
        emb.requires_grad_(True)
        labels = torch.randint(0, 4, (10, ))
        stored = list(module._memory)
        loss = module(emb, labels)
        ref = torch.cat([e for e, _ in stored]) if stored else None
        ref_labels = torch.cat([t for _, t in stored]) if stored else None
        assert len(stored) == min(step, 2)
        expected = module_brute(emb.detach(), labels, ref, ref_labels, 0.5,
                                weighting)
        assert loss.item() == pytest.approx(expected, abs=1e-12)
        loss.backward()
        batches.append(emb)
        grads.append(emb.grad.clone())
    # stored items are detached: later steps add no gradient to a batch
    for emb, grad in zip(batches, grads):
        assert torch.equal(emb.grad, grad)
    # evaluation mode neither reads nor writes the memory
    module.eval()
    emb = F.normalize(torch.randn(10, 6, dtype=torch.float64), dim=1)
    labels = torch.randint(0, 4, (10, ))
    assert module(emb, labels).item() == pytest.approx(
        module_brute(emb, labels, None, None, 0.5, weighting), abs=1e-12)
    assert len(module._memory) == 2
    module.reset_memory()
    assert len(module._memory) == 0


def test_memory_changes_with_dimension_and_memory_zero():
    module = RaMBORecallLoss(memory=3).train()
    labels = torch.tensor([0, 0, 1, 1])
    module(F.normalize(torch.randn(4, 5), dim=1), labels)
    module(F.normalize(torch.randn(4, 7), dim=1), labels)  # new dim: reset
    assert len(module._memory) == 1
    assert module._memory[0][0].shape == (4, 7)
    none = RaMBORecallLoss().train()
    for _ in range(2):
        none(F.normalize(torch.randn(4, 5), dim=1), labels)
    assert len(none._memory) == 0


@pytest.mark.parametrize('device', DEVICES)
@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_half_precision(device, dtype):
    torch.manual_seed(1)
    emb = F.normalize(torch.randn(16, 8), dim=1).to(device, dtype)
    emb.requires_grad_(True)
    labels = torch.arange(16, device=device) % 4
    out = RaMBORecallLoss(lambda_val=4.0, log_diagnostics=True)(emb, labels)
    loss = out['loss_rambo_recall']
    loss.backward()
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    assert emb.grad.dtype == dtype and bool(torch.isfinite(emb.grad).all())
    ref = RaMBORecallLoss(lambda_val=4.0)
    assert loss.item() == pytest.approx(
        ref(emb.detach().float(), labels).item(), abs=1e-6)


@pytest.mark.parametrize('device', DEVICES)
def test_module_contract_and_diagnostics(device):
    loss = MODELS.build(dict(type='RaMBORecallLoss', lambda_val=4.0,
                             log_diagnostics=True))
    assert isinstance(loss, RaMBORecallLoss)
    emb = F.normalize(torch.randn(12, 8, device=device), dim=1)
    emb.requires_grad_(True)
    labels = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 4, 5],
                          device=device)
    out = loss(emb, labels)
    assert set(out) == {
        'loss_rambo_recall', 'rambo_recall_r1', 'rambo_pos_grad_frac',
        'rambo_neg_grad_frac', 'rambo_grad_density'
    }
    for key, value in out.items():
        assert value.dim() == 0 and torch.isfinite(value)
        if key != 'loss_rambo_recall':
            assert 0 <= value.item() <= 1
    out['loss_rambo_recall'].backward()
    # the three singleton classes have no positive and are no query
    pairs = retrieval_pairs(emb.detach(), labels)
    assert pairs.positives.sum(1).tolist() == [2] * 9 + [0] * 3
    assert not bool(pairs.valid.diagonal().any())
    # empty batch and a batch without positives: zero, graph kept
    loss = RaMBORecallLoss(log_diagnostics=True)
    for n in (0, 1):
        e = F.normalize(torch.randn(n, 8, device=device), dim=1)
        e.requires_grad_(True)
        value = loss(e, torch.arange(n, device=device))['loss_rambo_recall']
        value.backward()
        assert value.item() == 0
