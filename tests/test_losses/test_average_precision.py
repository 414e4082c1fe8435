"""The one-sort path of the RaMBO AP loss's two rankings (``L_mAP`` per
column, ``L_APC`` over all scores) equals the two separate rankings."""
import pytest
import torch
from sklearn.metrics import average_precision_score

from mmdet_rankloss.losses import BlackboxRanker
from mmdet_rankloss.losses.average_precision import blackbox_ap_classes


def dense_scores(kind, rows=6000, columns=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    if kind == 'fresh':  # a fresh dense head: long runs of equal scores
        x = (-4.595 + 0.0027 * torch.randn(rows, columns, generator=g))
        x = x.sigmoid()
    elif kind == 'ties':
        x = torch.randint(0, 3, (rows, columns), generator=g).float()
    else:
        x = torch.randn(rows, columns, generator=g)
    positives = torch.rand(rows, columns, generator=g) < 0.01
    positives[:, -1] = False  # a column without positives is left out
    return x, positives


@pytest.mark.parametrize('kind', ['fresh', 'ties', 'spread'])
@pytest.mark.parametrize('margin', [0.0, 0.15])
@pytest.mark.parametrize('normalize_ranks', [True, False])
def test_equals_two_separate_rankings(kind, margin, normalize_ranks):
    x, positives = dense_scores(kind)
    ranker = BlackboxRanker(0.7, normalize_ranks)
    leaf = x.clone().requires_grad_()
    columns, flat = blackbox_ap_classes(leaf, positives, None, margin,
                                        'sum', True, 0.7, normalize_ranks,
                                        False)
    (columns.loss + 2 * flat.loss).backward()
    ref_leaf = x.clone().requires_grad_()
    ref_columns = ranker(ref_leaf.t(), positives.t(), margin, 'sum', True)
    ref_flat = ranker(ref_leaf.reshape(1, -1), positives.reshape(1, -1),
                      margin, 'mean', True)
    (ref_columns.loss + 2 * ref_flat.loss).backward()
    for got, ref in ((columns, ref_columns), (flat, ref_flat)):
        for a, b in zip(got, ref):
            assert a is b if a is None else torch.equal(a, b)
    assert torch.equal(leaf.grad, ref_leaf.grad)
    # and the value is 1 - AP (sklearn) of the shifted scores
    shifted = x.double() + torch.where(positives, -margin / 2, margin / 2)
    expected = 1 - average_precision_score(positives.reshape(-1).numpy(),
                                           shifted.reshape(-1).numpy())
    if kind == 'spread':  # sklearn merges ties, the loss ranks by index
        assert flat.loss.item() == pytest.approx(expected, abs=1e-6)
