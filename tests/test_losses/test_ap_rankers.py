"""Tests of the AP loss back-ends: blackbox, sigmoid soft ranks, sorters."""
import pytest
import torch
from sklearn.metrics import average_precision_score

from mmdet.registry import MODELS
from mmdet_rankloss.losses import (BlackboxRanker, RaMBOAPLoss, SigmoidRanker,
                                   SorterRanker)
from mmdet_rankloss.ops.ranking import exact_rank
from mmdet_rankloss.networks.sorters import LSTMSorter, save_sorter

DEVICES = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])


class ExactSorter(torch.nn.Module):
    """A 'perfect' sorter: exact normalised ranks (no gradient), so chunk
    APs are exact and the chunking itself can be checked."""

    def __init__(self, seq_len):
        super().__init__()
        self.seq_len = seq_len

    def forward(self, y):
        assert y.shape[1] == self.seq_len
        return exact_rank(y, normalize=True)


def rows(num_rows=3, n=40, fg=0.3, seed=0, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    scores = torch.randn(num_rows, n, generator=gen, dtype=dtype)
    positives = torch.rand(num_rows, n, generator=gen) < fg
    positives[:, 0] = True  # every row has a positive
    return scores, positives


def sk_aps(scores, positives):
    return torch.tensor([
        average_precision_score(p.numpy(), s.detach().double().numpy())
        for s, p in zip(scores, positives)
    ], dtype=torch.float64)


@pytest.mark.parametrize('ranker', [
    BlackboxRanker(),
    SigmoidRanker(temperature=0.3),
    SorterRanker(sorter=ExactSorter(16)),
])
def test_every_ranker_logs_the_exact_ap(ranker):
    """Only the gradient differs between back-ends: the AP they report is
    sklearn's (distinct scores, margin 0)."""
    scores, positives = rows()
    out = ranker(scores, positives, margin=0.0)
    assert torch.allclose(out.ap, sk_aps(scores, positives).to(out.ap))
    assert out.valid.all()


@pytest.mark.parametrize('device', DEVICES)
def test_sigmoid_ranker_converges_to_exact_ap(device):
    """The soft AP tends to 1 - sklearn AP as the sigmoid sharpens."""
    scores, positives = rows()
    scores, positives = scores.to(device), positives.to(device)
    target = (1 - sk_aps(scores.cpu(), positives.cpu())).mean().item()
    errors = [
        abs(SigmoidRanker(temperature=t)(scores, positives, 0.0).loss.item()
            - target) for t in (1.0, 0.1, 1e-6)
    ]
    # not monotone in t (soft errors of several positives can cancel), but
    # a smooth sigmoid is visibly off and a sharp one exact
    assert errors[0] > 1e-3 and errors[1] > 1e-5
    assert errors[2] < 1e-9


def test_sigmoid_ranker_gradcheck_float64():
    """With the numerator differentiated the loss is a smooth function."""
    scores, positives = rows(num_rows=2, n=12)
    ranker = SigmoidRanker(temperature=0.7, positive_rank_grad=True)
    leaf = scores.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda x: ranker(x, positives, 0.15).loss, (leaf, ))


@pytest.mark.parametrize('positive_rank_grad', [False, True])
def test_sigmoid_ranker_matches_brute_force_soft_ap(positive_rank_grad):
    """Eq. 4 (SRT) written out with an explicit n x n sigmoid matrix: value
    and gradient, the numerator held constant unless positive_rank_grad."""
    scores, positives = rows(num_rows=2, n=15)
    t, margin = 0.4, 0.2
    leaf = scores.clone().requires_grad_(True)
    shifted = leaf + torch.where(positives, -margin / 2, margin / 2)
    expected = []
    for s, p in zip(shifted, positives):
        pair = torch.sigmoid((s[None, :] - s[:, None]) / t)  # [i, k]
        r_all = 0.5 + pair.sum(1)
        r_pos = 0.5 + (pair * p[None, :]).sum(1)
        if not positive_rank_grad:
            r_pos = r_pos.detach()
        expected.append(1 - (r_pos / r_all)[p].mean())
    expected = torch.stack(expected).mean()
    (expected_grad, ) = torch.autograd.grad(expected, leaf)
    leaf = scores.clone().requires_grad_(True)
    loss = SigmoidRanker(temperature=t, positive_rank_grad=positive_rank_grad)(
        leaf, positives, margin).loss
    loss.backward()
    assert loss.item() == pytest.approx(expected.item(), abs=1e-12)
    assert torch.allclose(leaf.grad, expected_grad, atol=1e-12)


def test_sigmoid_ranker_pushes_positives_up_and_negatives_down():
    """Every score gets a gradient, in the direction that raises AP."""
    scores, positives = rows(num_rows=1, n=30)
    leaf = scores.clone().requires_grad_(True)
    SigmoidRanker(temperature=0.5)(leaf, positives, 0.0).loss.backward()
    assert (leaf.grad != 0).all()
    assert (leaf.grad[~positives] > 0).all()  # descent lowers negatives
    assert leaf.grad[positives].sum() < 0


@pytest.mark.parametrize('n', [16, 48, 50, 7])
def test_sorter_chunks_cover_every_element(n):
    """Chunks are random subsets of seq_len elements: all elements are used,
    only the last chunk repeats (first-chunk) elements, a short row is one
    chunk."""
    ranker = SorterRanker(sorter=ExactSorter(16))
    scores = torch.arange(2 * n, dtype=torch.float64).view(2, n)
    chunks, chunk_pos, chunk_row = ranker._chunks(scores, scores > 0)
    num_chunks = -(-n // 16)
    assert chunks.shape == (2 * num_chunks, min(n, 16))
    for r in range(2):
        members = chunks[chunk_row == r]
        assert set(members.flatten().tolist()) == set(scores[r].tolist())
        assert all(len(set(c.tolist())) == c.numel() for c in members)
        if n % 16 == 0:  # an exact partition
            assert members.numel() == n


def test_exact_sorter_on_one_chunk_gives_exact_ap():
    """With a perfect sorter and a row no longer than seq_len (padded), the
    loss is 1 - AP exactly; chunked rows are exact when ranking is perfect."""
    scores, positives = rows(num_rows=3, n=12)
    ranker = SorterRanker(sorter=ExactSorter(16))
    loss = ranker(scores, positives, 0.0).loss
    target = (1 - sk_aps(scores, positives)).mean().item()
    assert loss.item() == pytest.approx(target, abs=1e-12)
    # perfect ranking: every chunk has AP 1 whatever the chunking
    perfect = torch.where(positives, 10.0, -10.0).double() + scores * 0.1
    assert SorterRanker(sorter=ExactSorter(5))(perfect, positives,
                                               0.0).loss.item() == 0


def test_sorter_ranker_gradient_and_scale_invariance():
    """Rows are standardised: scaling the scores scales the gradient by 1/c
    and leaves the loss alone; the handcrafted sorter pushes positives up."""
    scores, positives = rows(num_rows=2, n=100, seed=3)
    ranker = SorterRanker()  # handcrafted, seq_len 100: one chunk per row
    grads, losses = [], []
    for c in (1.0, 8.0):
        leaf = (scores * c).requires_grad_(True)
        loss = ranker(leaf, positives, 0.0).loss
        loss.backward()
        grads.append(leaf.grad)
        losses.append(loss.item())
    assert losses[0] == pytest.approx(losses[1], rel=1e-9)
    assert torch.allclose(grads[0], grads[1] * 8.0)
    assert grads[0][positives].sum() < 0 < grads[0][~positives].sum()


def test_sorter_ranker_loads_a_pretrained_checkpoint(tmp_path):
    torch.manual_seed(0)
    sorter = LSTMSorter(seq_len=10, hidden_size=4, num_layers=1)
    # untrained, it predicts ranks near 0: better than possible, which the
    # clamp turns into no gradient; a bias of 1 predicts ranks near d
    sorter.proj.bias.data.fill_(1.0)
    path = str(tmp_path / 'sorter.pth')
    save_sorter(sorter, path)
    ranker = MODELS.build(dict(type='SorterRanker', checkpoint=path))
    for a, b in zip(ranker.sorter.parameters(), sorter.parameters()):
        assert torch.equal(a, b) and not a.requires_grad
    scores, positives = rows(num_rows=2, n=25, dtype=torch.float32)
    leaf = scores.clone().requires_grad_(True)
    ranker.train()
    ranker(leaf, positives, 0.15).loss.backward()
    assert not ranker.sorter.training
    assert torch.isfinite(leaf.grad).all() and leaf.grad.abs().sum() > 0
    finetuned = SorterRanker(checkpoint=path, finetune_sorter=True).train()
    finetuned(leaf, positives, 0.15).loss.backward()
    assert finetuned.sorter.training
    assert all(p.grad is not None for p in finetuned.sorter.parameters())


@pytest.mark.parametrize('ranker', [
    dict(type='SigmoidRanker'), dict(type='SorterRanker')])
@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_half_precision_scores_and_no_positives(ranker, dtype):
    """Half scores are ranked in fp32; an all-background batch gives a zero
    loss that keeps the graph."""
    loss = RaMBOAPLoss(log_diagnostics=True, ranker=ranker, memory=2)
    torch.manual_seed(0)
    cls_score = torch.randn(64, 6).to(dtype).requires_grad_(True)
    labels = torch.randint(0, 6, (64, ))
    out = loss(cls_score, labels)
    total = out['loss_rambo_map'] + out['loss_rambo_apc']
    assert total.dtype == torch.float32 and torch.isfinite(total)
    total.backward()
    assert torch.isfinite(cls_score.grad.float()).all()
    background = torch.full((64, ), 5)
    fresh = RaMBOAPLoss(log_diagnostics=True, ranker=ranker)
    out = fresh(cls_score.detach().float().requires_grad_(True), background)
    assert out['loss_rambo_map'].item() == 0
    assert out['loss_rambo_map'].requires_grad


def test_default_ranker_is_blackbox_with_the_loss_arguments():
    loss = RaMBOAPLoss(log_diagnostics=True,
                       lambda_val=2.0, normalize_ranks=False)
    assert isinstance(loss.ranker, BlackboxRanker)
    assert (loss.ranker.lambda_val, loss.ranker.normalize_ranks) == (2.0,
                                                                     False)
    built = RaMBOAPLoss(log_diagnostics=True,
                        ranker=dict(type='BlackboxRanker', lambda_val=2.0))
    torch.manual_seed(0)
    cls_score = torch.randn(50, 5, requires_grad=True)
    labels = torch.randint(0, 5, (50, ))
    a = RaMBOAPLoss(log_diagnostics=True, lambda_val=2.0)(cls_score, labels)
    b = built(cls_score, labels)
    for key in a:
        assert torch.equal(a[key], b[key])


@pytest.mark.parametrize('kwargs, match', [
    (dict(ranker=dict(type='SigmoidRanker'), lambda_val=1.0),
     'lambda_val of RaMBOAPLoss only configure the default ranker'),
    (dict(ranker=dict(type='CrossEntropyLoss')), 'ranker must be None'),
    (dict(ranker='sigmoid'), 'ranker must be None'),
    (dict(ranker=dict(type='SigmoidRanker', temperature=0)),
     'temperature must be a finite number > 0'),
    (dict(ranker=dict(type='SorterRanker', min_std=-1)),
     'min_std must be a finite number > 0'),
])
def test_bad_ranker_settings_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RaMBOAPLoss(**kwargs)


def test_sorter_ranker_with_a_wrong_checkpoint_names_the_file(tmp_path):
    path = tmp_path / 'not_a_sorter.pth'
    torch.save({'weights': torch.zeros(3)}, path)
    with pytest.raises(ValueError, match='not_a_sorter.pth'):
        RaMBOAPLoss(ranker=dict(type='SorterRanker', checkpoint=str(path)))
