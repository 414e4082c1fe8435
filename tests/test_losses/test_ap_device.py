"""The fixed-shape blackbox AP (``blackbox_ap``) against the AP back-end it
replaced (``_ap_reference``: positives selected by ``nonzero``, ranks
through ``blackbox_rank_loss`` and autograd), and ``RaMBOAPLoss`` against
the same loss computed with RoIs of weight 0 left out: values and
gradients bit for bit where the arithmetic is the same, the device path
(``torch.compile``'s trace, the ``meta`` device) against the CPU's.
"""
import _ap_reference as ref  # tests/test_losses on sys.path
import pytest
import torch
from _device_modes import ShadowMeta

from mmdet.registry import MODELS
from mmdet_rankloss.losses import RaMBOAPLoss
from mmdet_rankloss.losses.average_precision import (blackbox_ap,
                                                     blackbox_ap_classes,
                                                     rambo_ap_loss,
                                                     shift_scores)

CASES = ('random', 'ties', 'saturated', 'no_positives', 'one_positive',
         'all_positive', 'many_rows')


def make_rows(case, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    rows, n = (40, 30) if case == 'many_rows' else (4, 257)
    scores = torch.randn(rows, n, generator=g, dtype=dtype)
    positives = torch.rand(rows, n, generator=g) < 0.2
    positives[0] = False  # a row without a positive in every case
    if case == 'ties':
        scores = torch.randint(0, 4, (rows, n), generator=g).to(dtype)
    elif case == 'saturated':  # sigmoid scores at 0 and 1
        scores = (scores * 40).sigmoid()
    elif case == 'no_positives':
        positives[:] = False
    elif case == 'one_positive':
        positives[:] = False
        positives[1, 7] = True
    elif case == 'all_positive':
        positives[1:] = True
    return scores.requires_grad_(True), positives


def old_rows(scores, positives, margin, reduction, lambda_val, normalize,
             prg):
    rows_fn = lambda *a: ref.blackbox_ap_rows(  # noqa: E731
        *a, lambda_val, normalize, prg)
    return ref.ap_of_rows(scores, positives, margin, reduction, True,
                          rows_fn, True)


def new_rows(scores, positives, margin, reduction, lambda_val, normalize,
             prg):
    shifted = shift_scores(scores, positives, margin)
    return blackbox_ap(shifted, positives, lambda_val, normalize, reduction,
                       prg, with_grad=True)


@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
@pytest.mark.parametrize('prg', [False, True])
@pytest.mark.parametrize('normalize, reduction, margin',
                         [(True, 'mean', 0.0), (False, 'sum', 0.15),
                          (True, 'sum', 0.15)])
def test_equals_the_replaced_back_end_bit_for_bit(case, dtype, prg,
                                                  normalize, reduction,
                                                  margin):
    results = []
    for fn in (old_rows, new_rows):
        scores, positives = make_rows(case, dtype)
        out = fn(scores, positives, margin, reduction, 0.5, normalize, prg)
        (out.loss * 3.0).backward()
        results.append((out, scores.grad))
    (old, old_grad), (new, new_grad) = results
    assert torch.equal(new.loss.detach(), old.loss.detach())
    assert torch.equal(new.valid, old.valid)
    assert torch.equal(new.ap, old.ap)
    assert torch.equal(new.grad, old.grad)
    assert torch.equal(new_grad, old_grad)


@pytest.mark.parametrize('prg', [False, True])
def test_unranked_elements_are_as_if_removed(prg):
    """A row with ``-inf`` elements and its ``length`` = the row without
    them, for the loss, AP and the gradient of every ranked element."""
    g = torch.Generator().manual_seed(3)
    lengths = [50, 33, 1, 0]
    scores = torch.full((4, 50), float('-inf'))
    positives = torch.zeros(4, 50, dtype=torch.bool)
    for r, m in enumerate(lengths):
        scores[r, :m] = torch.randn(m, generator=g)
        positives[r, :m] = torch.rand(m, generator=g) < 0.3
    positives[2, 0] = True
    perm = torch.randperm(50, generator=g)  # the -inf ones anywhere
    scores, positives = scores[:, perm], positives[:, perm]
    out = blackbox_ap(scores, positives, 0.5, True, 'sum', prg,
                      with_grad=True, length=torch.tensor(lengths))
    for r, m in enumerate(lengths):
        keep = scores[r] > float('-inf')
        alone = blackbox_ap(scores[r, keep][None], positives[r, keep][None],
                            0.5, True, 'sum', prg, with_grad=True)
        assert torch.equal(out.ap[r], alone.ap[0])
        assert torch.equal(out.grad[r, keep], alone.grad[0])
        assert not out.grad[r, ~keep].any()


def masked_reference(cls_score, labels, weight, stored, loss):
    """``RaMBOAPLoss``'s two losses the way the replaced code computed
    them: RoIs of weight 0 left out, rows selected by ``nonzero``."""
    num_classes = loss.space.num_classes(cls_score)
    scores = loss.space.ranked(cls_score, num_classes)
    targets = torch.nn.functional.one_hot(labels, num_classes + 1)
    targets = targets[:, :num_classes].bool()
    keep = weight > 0
    scores, targets = scores[keep], targets[keep]
    ranker = loss.ranker
    rows_fn = lambda *a: ref.blackbox_ap_rows(  # noqa: E731
        *a, ranker.lambda_val, ranker.normalize_ranks,
        ranker.positive_rank_grad)
    rows, row_pos = scores.t(), targets.t()
    if stored is not None:
        kept = stored[0][:, 0] > float('-inf')
        rows = torch.cat([scores, stored[0][kept]]).t()
        row_pos = torch.cat([targets, stored[1][kept]]).t()
    per_class = ref.ap_of_rows(rows, row_pos, loss.margin, loss.reduction,
                               False, rows_fn, True)
    across = ref.ap_of_rows(scores.reshape(1, -1), targets.reshape(1, -1),
                            loss.margin, 'mean', False, rows_fn, True)
    return (loss.loss_weight * loss.map_weight * per_class.loss,
            loss.loss_weight * loss.apc_weight * across.loss)


@pytest.mark.parametrize('space', ['logits', 'softmax', 'sigmoid'])
@pytest.mark.parametrize('memory', [0, 3])
@pytest.mark.parametrize('prg', [False, True])
def test_module_equals_leaving_weight_0_rois_out(space, memory, prg,
                                                 rpn_batch):
    loss = RaMBOAPLoss(memory=memory, score_space=space,
                       positive_rank_grad=prg, log_diagnostics=True).train()
    for step in range(memory + 1):
        cls_score, labels = rpn_batch(200, 6, space=space, seed=step)
        weight = (torch.rand(200, generator=torch.Generator().manual_seed(
            step)) > 0.2).float()
        stored = loss._memory.read(loss.space.ranked(cls_score.detach(), 6))
        x_ref = cls_score.detach().clone().requires_grad_(True)
        old_map, old_apc = masked_reference(x_ref, labels, weight, stored,
                                            loss)
        (old_map + old_apc).backward()
        out = loss(cls_score, labels, weight)
        (out['loss_rambo_map'] + out['loss_rambo_apc']).backward()
        torch.testing.assert_close(out['loss_rambo_map'], old_map,
                                   rtol=1e-6, atol=0)
        torch.testing.assert_close(out['loss_rambo_apc'], old_apc,
                                   rtol=1e-6, atol=0)
        torch.testing.assert_close(cls_score.grad, x_ref.grad, rtol=1e-6,
                                   atol=1e-9)


def test_functional_loss_equals_the_replaced_one():
    scores, positives = make_rows('random')
    new = rambo_ap_loss(scores, positives, margin=0.1)
    old = ref.reference_average_precision_loss(scores, positives,
                                               margin=0.1)
    assert torch.equal(new, old)


def two_separate_rankings(scores, positives, stored, margin, prg,
                          normalize=True):
    """The RaMBO AP loss's two rankings as they were computed before one
    autograd Function took both: two :func:`blackbox_ap` calls (each
    equal to the replaced back-end, above), the gradients added by
    autograd; ``stored`` None: every item ranked, no lengths."""
    n, num_classes = scores.shape
    values, targets = scores, positives
    if stored is not None:
        values = torch.cat([scores, stored[0]])
        targets = torch.cat([positives, stored[1]])
    shifted = shift_scores(values, targets, margin)
    class_length = flat_length = None
    if stored is not None:
        ranked = shifted[:, 0] > float('-inf')
        class_length = ranked.sum(dtype=shifted.dtype).expand(num_classes)
        flat_length = (ranked[:n].sum(dtype=shifted.dtype) *
                       num_classes).reshape(1)
    per_class = blackbox_ap(shifted.t(), targets.t(), 0.5, normalize,
                            'mean', prg, True, class_length)
    across = blackbox_ap(shifted[:n].reshape(1, -1),
                         positives.reshape(1, -1), 0.5, normalize, 'mean',
                         prg, True, flat_length)
    return per_class, across


@pytest.mark.parametrize('margin, normalize, memory',
                         [(0.15, True, True), (0.0, False, True),
                          (0.0, True, False)],
                         ids=['margin', 'no-margin-integer-ranks',
                              'no-margin-no-memory'])
@pytest.mark.parametrize('prg', [False, True])
@pytest.mark.parametrize('device', ['cpu', 'meta'])
def test_both_rankings_in_one_function_equal_two_calls(
        prg, device, margin, normalize, memory):
    """:func:`blackbox_ap_classes` (both rankings in one Function, their
    elementwise steps shared; on a device both in one sort) equals the two
    separate calls it replaced, bit for bit: losses, AP, valid classes,
    the gradients it reports and the score gradient, with a memory and
    RoIs that are not ranked (or neither), ties (-0.0 and +0.0 among them:
    equal scores), on the CPU and on the device path (``meta``: no read,
    no copy to it)."""
    g = torch.Generator().manual_seed(5)
    n, m, num_classes = 60, 90, 5
    scores = torch.randn(n, num_classes, generator=g)
    scores[:n // 2] = scores[:n // 2].round()  # ties, -0.0 and +0.0
    assert (scores.signbit() & (scores == 0)).any() and \
        (~scores.signbit() & (scores == 0)).any()
    labels = torch.randint(0, num_classes + 1, (n + m, ), generator=g)
    targets = torch.nn.functional.one_hot(labels, num_classes + 1)[
        :, :num_classes].bool()
    targets[:, 3] = False  # a class without a positive
    stored = torch.randn(m, num_classes, generator=g)
    stored[:m // 3] = stored[:m // 3].round()
    dropped = torch.rand(n + m, generator=g) < 0.2
    if memory:
        scores[dropped[:n]] = float('-inf')
        stored[dropped[n:]] = float('-inf')
        targets[dropped] = False
    positives = targets[:n]
    stored = (stored, targets[n:]) if memory else None
    leaf = scores.clone().requires_grad_(True)
    old = two_separate_rankings(leaf, positives, stored, margin, prg,
                                normalize)
    (2 * old[0].loss + 3 * old[1].loss).backward()

    def merged(move):
        x = move(scores).requires_grad_(True)
        out = blackbox_ap_classes(
            x, move(positives),
            None if stored is None else tuple(move(t) for t in stored),
            margin, 'mean', True, 0.5, normalize, prg, masked=memory)
        (2 * out[0].loss + 3 * out[1].loss).backward()
        return out, x.grad

    if device == 'cpu':
        new, grad = merged(lambda t: t.clone())
        value = lambda t: t  # noqa: E731
    else:
        with ShadowMeta() as meta:
            new, grad = merged(meta.to_meta)
        assert meta.total == 0, meta.trace
        value = meta.value
    for got, expected in zip(new, old):
        for a, b in zip(got, expected):
            assert torch.equal(value(a), b.detach())
    assert torch.equal(value(grad), leaf.grad)


def test_bad_input_still_named_on_the_cpu(rpn_batch):
    cls_score, labels = rpn_batch(20, 4)
    with pytest.raises(ValueError, match='NaN or inf'):
        RaMBOAPLoss()(cls_score.detach() * float('nan'), labels)
    with pytest.raises(ValueError, match='labels must be integers in 0..4'):
        RaMBOAPLoss()(cls_score, labels + 5)


def test_device_path_asserts_on_the_device(rpn_batch):
    """On the device path the checks are device assertions: nothing read
    back, and the message still names the problem."""
    cls_score, labels = rpn_batch(20, 4)
    bad = cls_score.detach().clone()
    bad[3, 1] = float('nan')
    with ShadowMeta() as meta:
        loss = meta.module_to_meta(RaMBOAPLoss(memory=0))
        xm, lm = meta.to_meta(bad), meta.to_meta(labels)
        with pytest.raises(RuntimeError, match='cls_score contains NaN'):
            loss(xm, lm)
    assert meta.total == 0, meta.trace


@pytest.mark.parametrize('cfg', [
    dict(type='RaMBOAPLoss', memory=0),
    dict(type='RaMBOAPLoss', memory=0, log_diagnostics=True),
    dict(type='RaMBOAPLoss', memory=0, positive_rank_grad=True),
    dict(type='MixedRankLoss',
         rank_loss=dict(type='RaMBOAPLoss', memory=0, margin=0.0),
         aux_loss=dict(type='FocalLoss', use_sigmoid=True))
], ids=['rambo', 'rambo_diagnostics', 'positive_rank_grad', 'mixed_focal'])
def test_compiles_without_a_graph_break(cfg, rpn_batch):
    """``torch.compile(fullgraph=True)`` traces the whole loss (the device
    path: no read, no NumPy), forward and backward, with the eager
    values."""
    cls_score, labels = rpn_batch(64, 5, seed=4)
    weight = torch.ones(64)
    weight[:6] = 0
    loss = MODELS.build(cfg)

    def total(x):
        out = loss(x, labels, weight, avg_factor=20.0)
        if isinstance(out, torch.Tensor):  # the default
            return out
        return sum(v for k, v in out.items() if k.startswith('loss'))

    torch._dynamo.reset()
    compiled = torch.compile(total, fullgraph=True, backend='eager')
    x = cls_score.detach().clone().requires_grad_(True)
    value = compiled(x)
    value.backward()
    ref_value = total(cls_score)
    ref_value.backward()
    assert torch.equal(value.detach(), ref_value.detach())
    assert torch.equal(x.grad, cls_score.grad)
