"""``lab/rankloss_lab/analysis/dense_grad_scale.py`` at toy size: focal's gradient
agrees with a brute-force formula, RaMBO's is finite, and the spread state
shrinks RaMBO's gradient far more than focal's (the documented finding)."""
import pytest
import torch


def test_focal_matches_the_formula():
    from rankloss_lab.analysis import dense_grad_scale as tool
    logits, labels = tool.make_batch(500, 3, 20, 'spread')
    got = tool.gradient_scale(tool.FOCAL, logits, labels)
    x = logits.clone().requires_grad_(True)
    t = torch.nn.functional.one_hot(labels, 4)[:, :3].float()
    p = x.sigmoid()
    pt = p * t + (1 - p) * (1 - t)
    alpha = 0.25 * t + 0.75 * (1 - t)
    loss = (-alpha * (1 - pt) ** 2 * pt.clamp_min(1e-12).log()).sum() / 20
    loss.backward()
    assert got['l2'] == pytest.approx(float(x.grad.norm()), rel=1e-4)
    assert got['nonzero'] == 1.0


@pytest.mark.slow
def test_rambo_gradient_collapses_when_scores_spread():
    from rankloss_lab.analysis import dense_grad_scale as tool
    rows = tool.main(['--anchors', '20000', '--classes', '3',
                      '--positives', '60'])
    by = {(r['state'], r['loss']): r for r in rows}
    for state in ('prior', 'spread'):
        for loss in ('RaMBO sigmoid lambda 0.5', 'RaMBO logits lambda 0.5'):
            assert torch.isfinite(torch.tensor(by[state, loss]['l2']))
    ratio = {s: by[s, 'RaMBO sigmoid lambda 0.5']['l2'] / by[s, 'focal']['l2']
             for s in ('prior', 'spread')}
    assert ratio['spread'] < ratio['prior'] / 10, ratio
    with pytest.raises(ValueError, match='state'):
        tool.make_batch(10, 2, 2, 'fitted')
