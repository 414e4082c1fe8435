"""The bucketed peer (``lab/rankloss_lab/bucketed_losses.py``) against our
error-driven losses: with a smoothing width below every gap between two
different scores our smoothed step is the hard step the bucketed loss uses,
so value and update must be the same (float64), ties and one positive
included; and the buckets are what the paper describes (at most 2P + 1)."""
import pytest
import torch

from rankloss_lab.bucketed_losses import (bucketed_loss, bucketed_terms,
                                         hard_step, negative_buckets)
from mmdet_rankloss.losses import error_driven_loss

N, P = 3000, 40


def _inputs(kind, seed=0):
    """(scores, positives, labels, delta): ``delta`` a quarter of the
    smallest gap between two different scores. The gaps are not tiny: our
    core's fixed-point sums lose digits as ``delta`` shrinks (3,000 N(0, 1)
    scores: at ``delta`` 3e-8 its update entries are off by up to 7e-9 of
    their size, at 3e-10 by 4e-7)."""
    g = torch.Generator().manual_seed(seed)
    if kind == 'tied':  # 10 score levels, 4 label levels: ties everywhere
        scores = torch.randint(0, 10, (N, ), generator=g).double() / 2
        quality = torch.randint(0, 4, (P, ), generator=g).double() / 4
    else:  # distinct scores in random order, 4 / N apart, in [-2, 2)
        scores = (torch.randperm(N, generator=g).double() - N / 2) * 4 / N
        quality = torch.rand(P, generator=g, dtype=torch.float64)
    positives = torch.zeros(N, dtype=torch.bool)
    positives[torch.randperm(N, generator=g)[:1 if kind == 'one' else P]] = \
        True
    levels = scores.unique()
    delta = float(levels.diff().min()) / 4
    return scores, positives, quality[:int(positives.sum())], delta


def _value_and_grad(loss_fn, scores):
    leaf = scores.clone().requires_grad_(True)
    value = loss_fn(leaf)
    value.backward()
    return value.detach(), leaf.grad


@pytest.mark.parametrize('kind', ['random', 'tied', 'one'])
@pytest.mark.parametrize('mode', ['rs', 'ap'])
def test_equals_ours_with_a_hard_step(kind, mode):
    scores, positives, quality, delta = _inputs(kind)
    ours = _value_and_grad(
        lambda s: error_driven_loss(s, positives, delta, mode,
                                    quality=quality)[0], scores)
    peer = _value_and_grad(
        lambda s: bucketed_loss(s, positives, mode, quality=quality), scores)
    assert peer[0] == pytest.approx(float(ours[0]), abs=1e-12)
    torch.testing.assert_close(peer[1], ours[1], rtol=0, atol=1e-12)
    assert ours[1].abs().max() > 1e-3  # a real update, not two zeros
    assert float(peer[1].sum()) == pytest.approx(0, abs=1e-12)


def test_buckets_are_at_most_2p_plus_1_and_hold_every_negative():
    scores, positives, _, _ = _inputs('tied')
    u = scores[positives]
    buckets = negative_buckets(scores, ~positives, u)
    assert buckets.counts.numel() <= 2 * positives.sum() + 1
    assert int(buckets.counts.sum()) == int((~positives).sum())
    # every negative of a bucket has the bucket's relation to every positive
    rel = hard_step(scores[buckets.index][None, :] - u[:, None])
    torch.testing.assert_close(rel, buckets.relation[:, buckets.of_negative])


def test_no_positive_gives_zero():
    scores = torch.randn(10, dtype=torch.float64)
    value, grad = bucketed_terms(scores, torch.zeros(10, dtype=torch.bool))
    assert float(value) == 0 and not grad.any()
