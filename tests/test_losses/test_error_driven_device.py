"""The device path of Rank & Sort, aLRP and AP-Loss and of their dense heads.

On a GPU these losses are launch- and read-bound, so their device path has a
budget (at dense size, 100k anchors x 80 classes, in
``test_device_budgets``): per forward and backward a fixed number of
kernels and :data:`MAX_READS` sync (the positives' ``nonzero``, a read
back to the host which sizes the ``P x P`` relations; no copy of host
memory to the device), a number of kernels that does not grow with the
classes, the anchors (images) or the FPN levels, and no data-dependent
shape elsewhere.
Counted on the meta device with CPU shadows (``ShadowMeta``, the CUDA code
path without a GPU). The device path is the CPU path's algorithm: both are
compared here, and with the authors' algorithm on the edge cases (ties,
saturated scores, no positive, one positive, ignored anchors, many
classes). ``torch.compile`` traces the core without a graph break.

Measured before this path (meta, 100k x 80, 1,000 positives, 10 % of the
anchors ignored): RankSortLoss 247 kernels and 8 reads, ALRPLoss 271 and 6,
ErrorDrivenAPLoss 201 and 5 (and a ``nonzero`` per FPN level in the heads).
"""
import pytest
import torch
from _device_modes import ShadowMeta  # tests/test_losses on sys.path
from _error_driven_reference import reference
from _official_reference import (alrp_reference, flat_ranking,
                                 rank_sort_reference)
from mmengine.config import ConfigDict
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData
from test_device_budgets import MAX_OPS, budget_message

import mmdet_rankloss  # noqa: F401
from mmdet.registry import MODELS
from mmdet_rankloss.losses import error_driven_loss, error_driven_terms

#: syncs per call, both kinds together: reads back to the host and copies
#: of host memory to the device (ShadowMeta.total)
MAX_READS = 1
LOSSES = ('RankSortLoss', 'ALRPLoss', 'ErrorDrivenAPLoss')
#: the per-anchor input each loss takes
EXTRA = {'RankSortLoss': 'quality', 'ALRPLoss': 'loc_error'}


def dense_batch(n, c, num_pos, seed=0, dtype=torch.float32):
    """A dense head's batch: logits (n, c + 1) like a partly trained head
    (positives' scores raised), labels with ``num_pos`` positives, weights
    with 10 % of the anchors ignored (0), per-anchor values in [0, 1]."""
    gen = torch.Generator().manual_seed(seed)
    cls_score = (torch.randn(n, c + 1, generator=gen) - 3).to(dtype)
    labels = torch.full((n, ), c)
    rows = torch.randperm(n, generator=gen)[:num_pos]
    labels[rows] = torch.randint(0, c, (num_pos, ), generator=gen)
    cls_score[rows, labels[rows]] += 3
    weight = torch.ones(n, dtype=dtype)
    weight[torch.randperm(n, generator=gen)[:n // 10]] = 0
    extra = torch.rand(n, generator=gen, dtype=dtype)
    return cls_score, labels, weight, extra


def losses_of(out):
    return sum(v for k, v in out.items() if 'loss' in k and v is not None)


def run_cpu(name, batch, **cfg):
    cls_score, labels, weight, extra = batch
    x = cls_score.detach().clone().requires_grad_(True)
    loss = MODELS.build(dict(type=name, log_diagnostics=True, **cfg))
    kwargs = {EXTRA[name]: extra} if name in EXTRA else {}
    out = loss(x, labels, weight, **kwargs)
    losses_of(out).backward()
    return {k: v.detach() for k, v in out.items()}, x.grad


def run_meta(name, batch, **cfg):
    """(outputs, grad, meta) of one forward + backward on the meta device
    (values read from the shadows; counts from the call on)."""
    cls_score, labels, weight, extra = batch
    loss = MODELS.build(dict(type=name, log_diagnostics=True, **cfg))
    with ShadowMeta() as meta:
        loss = meta.module_to_meta(loss)
        x = meta.to_meta(cls_score).requires_grad_(True)
        args = [meta.to_meta(labels), meta.to_meta(weight)]
        kwargs = {EXTRA[name]: meta.to_meta(extra)} if name in EXTRA else {}
        meta.reset_counts()
        out = loss(x, *args, **kwargs)
        losses_of(out).backward()
        values = {k: meta.value(v) for k, v in out.items()}
        grad = meta.value(x.grad)
    return values, grad, meta


def counts(meta):
    return meta.num_ops, meta.total


@pytest.mark.parametrize('name', LOSSES)
def test_kernels_and_reads_do_not_grow(name):
    """The same kernels and reads at two sizes, two class counts and two
    numbers of positives; one read, the positives' ``nonzero``."""
    seen = {}
    for n, c, num_pos in ((400, 3, 20), (1200, 3, 60), (400, 11, 20)):
        *_, meta = run_meta(name, dense_batch(n, c, num_pos))
        seen[(n, c)] = counts(meta)
        assert dict(meta.syncs) == {'nonzero': 1}, meta.trace
        assert meta.num_ops <= MAX_OPS, budget_message(meta)
    assert len(set(seen.values())) == 1, seen


@pytest.mark.parametrize('name', LOSSES)
@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
def test_device_path_is_the_cpu_path(name, dtype):
    """The meta (device) path and the CPU path (NumPy stable order, reads
    for the checks) give the same values and updates, bit for bit, on a
    batch with exact ties."""
    batch = dense_batch(300, 4, 40, seed=2, dtype=dtype)
    batch = ((batch[0] * 2).round() / 2, ) + batch[1:]  # ties
    ref, ref_grad = run_cpu(name, batch)
    got, grad, _ = run_meta(name, batch)
    assert got.keys() == ref.keys()
    for key, value in ref.items():
        assert torch.equal(got[key], value), key
    assert torch.equal(grad, ref_grad)


# ---- edge cases against the authors' algorithm (float64)

def edge_batch(case):
    """(cls_score (N, C + 1) float64, labels, weight, per-anchor values,
    score_space) of one edge case."""
    gen = torch.Generator().manual_seed(7)
    n, c = (12, 80) if case == 'many_classes' else (30, 3)
    cls_score = torch.randn(n, c + 1, generator=gen, dtype=torch.float64)
    labels = torch.full((n, ), c)
    labels[::3] = torch.randint(0, c, (len(labels[::3]), ), generator=gen)
    weight = torch.ones(n, dtype=torch.float64)
    values = torch.rand(n, generator=gen, dtype=torch.float64)
    space = 'logits'
    if case == 'all_equal':
        cls_score.zero_()
    elif case == 'saturated':  # sigmoid scores exactly 1.0 and ~0, tied
        cls_score = (cls_score[:, :c].sign() * 40).contiguous()
        space = 'sigmoid'
    elif case == 'no_positive':
        labels.fill_(c)
    elif case == 'one_positive':
        labels.fill_(c)
        labels[4] = 1
    elif case == 'ignored':
        weight[::2] = 0  # ignored positives and negatives
    return cls_score, labels, weight, values, space


EDGE_CASES = ('all_equal', 'saturated', 'no_positive', 'one_positive',
              'ignored', 'many_classes')


@pytest.mark.parametrize('case', EDGE_CASES)
@pytest.mark.parametrize('name', LOSSES)
def test_edge_cases_match_the_authors_algorithm(case, name):
    """Value and update of each loss (its defaults) on the CPU and on the
    device path against the authors' algorithm (RS, aLRP) or the brute
    force of the paper (AP-Loss), float64."""
    cls_score, labels, weight, values, space = edge_batch(case)
    batch = (cls_score, labels, weight, values)
    ref_out, ref_grad = run_cpu(name, batch, score_space=space)
    got, grad, meta = run_meta(name, batch, score_space=space)
    for key, value in ref_out.items():
        assert torch.equal(got[key], value), key
    assert torch.equal(grad, ref_grad) and meta.total <= MAX_READS
    # the reference, on the ranked scores (sigmoid: d score / d logit)
    x = cls_score.detach().clone().requires_grad_(True)
    ranked = x.sigmoid() if space == 'sigmoid' else x[:, :-1]
    wide = torch.cat([ranked, ranked.new_zeros(len(ranked), 1)], 1)
    scores, pos, neg, rows = flat_ranking(wide, labels, weight)
    if name == 'RankSortLoss':
        ref, update = rank_sort_reference(scores, pos, values[rows], 0.5,
                                          negatives=neg)
        value = ref_out['loss_rank_sort']
    elif name == 'ALRPLoss':
        ref, update = alrp_reference(scores, pos, values[rows], 1.0,
                                     tau=0.5, negatives=neg)
        ref['loss'] = ref['cls']
        value = ref_out['loss_alrp_cls']
    else:
        ref, update, _ = reference(scores, pos, 1.0, 'ap', negatives=neg)
        value = ref_out['loss_ap']
    assert value.item() == pytest.approx(ref['loss'], abs=1e-9)
    (ranked.reshape(-1) * update).sum().backward()
    torch.testing.assert_close(ref_grad, x.grad, atol=1e-9, rtol=0)


@pytest.mark.parametrize('mode', ['rs', 'alrp', 'ap'])
def test_core_with_indices_is_the_core_with_a_mask(mode):
    """Given the positives' indices the core reads nothing back and
    returns exactly what it returns for the mask."""
    s, pos, quality, errors = _core_inputs()
    idx = pos.nonzero().squeeze(1)
    a = error_driven_terms(s, pos, 0.5, mode, quality=quality,
                           loc_error=errors)
    with ShadowMeta() as meta:
        sm, im = meta.to_meta(s), meta.to_meta(idx)
        qm, em = meta.to_meta(quality), meta.to_meta(errors)
        meta.reset_counts()
        b = error_driven_terms(sm, im, 0.5, mode, quality=qm, loc_error=em)
        values = [meta.value(t) for t in (b.loss, b.parts, b.grad,
                                          b.loc_weight)]
    assert meta.total == 0, meta.trace
    for got, ref in zip(values, (a.loss, a.parts, a.grad, a.loc_weight)):
        assert torch.equal(got, ref)



@pytest.mark.parametrize('mode', ['rs', 'alrp', 'ap'])
def test_outputs_written_in_out_dtype_are_the_rounded_ones(mode):
    """``out_dtype`` float32: the value, parts and localisation weights of
    the float64 computation, each rounded once (the value of 'rs' from
    its float64 parts); the update as without it."""
    s, pos, quality, errors = _core_inputs()
    ref = error_driven_terms(s.double(), pos, 0.5, mode, quality=quality,
                             loc_error=errors)
    got = error_driven_terms(s.double(), pos, 0.5, mode, quality=quality,
                             loc_error=errors, out_dtype=torch.float32)
    assert torch.equal(got.grad, ref.grad)
    for a, b in ((got.loss, ref.loss), (got.parts, ref.parts),
                 (got.loc_weight, ref.loc_weight)):
        assert a.dtype == torch.float32 and torch.equal(a, b.float())
    if mode == 'rs':
        assert ref.loss == ref.parts[0] + ref.parts[1]

# ---- value checks: ValueError on the CPU, device-side assertions

@pytest.mark.parametrize('name', LOSSES)
def test_bad_values_are_refused_on_both_paths(name):
    """NaN scores, labels out of range and a per-anchor value out of [0, 1]
    at a positive: ``ValueError`` on the CPU, a device-side assertion with
    the same message on the device path (the meta device's CPU shadow
    raises it at once; CUDA at its next synchronisation)."""
    cls_score, labels, weight, extra = dense_batch(200, 3, 20)
    bad = cls_score.clone()
    bad[5, 1] = float('nan')
    with pytest.raises(ValueError, match='cls_score contains NaN'):
        run_cpu(name, (bad, labels, weight, extra))
    with pytest.raises(RuntimeError, match='cls_score contains NaN'):
        run_meta(name, (bad, labels, weight, extra))
    wrong = labels.clone()
    wrong[3] = 7
    with pytest.raises(ValueError, match='labels must be integers'):
        run_cpu(name, (cls_score, wrong, weight, extra))
    with pytest.raises(RuntimeError, match='labels must be integers'):
        run_meta(name, (cls_score, wrong, weight, extra))
    if name in EXTRA:
        row = int(((labels < 3) & (weight > 0)).nonzero()[0])
        message = f'{EXTRA[name]} must be finite and in'
        for bad_value in (float('nan'), -0.5, 1.5):
            # (a Rank & Sort label out of [0, 1] stays a positive, where
            # the labels are checked)
            out_of_range = extra.clone()
            out_of_range[row] = bad_value
            with pytest.raises(ValueError, match=message):
                run_cpu(name, (cls_score, labels, weight, out_of_range))
            with pytest.raises(RuntimeError, match=message):
                run_meta(name, (cls_score, labels, weight, out_of_range))
        # a bad value where no positive is, is not read
        ignored = extra.clone()
        ignored[int((labels == 3).nonzero()[0])] = float('nan')
        run_cpu(name, (cls_score, labels, weight, ignored))


# ---- torch.compile

def _core_inputs(n=3000, seed=0):
    gen = torch.Generator().manual_seed(seed)
    s = torch.randn(n, generator=gen)
    s[:40] = s[40]  # ties
    pos = torch.rand(n, generator=gen) < 0.05
    num_pos = int(pos.sum())
    return (s, pos, torch.rand(num_pos, generator=gen),
            torch.rand(num_pos, generator=gen))


@pytest.mark.parametrize('mode', ['rs', 'alrp', 'ap'])
def test_core_compiles_without_a_graph_break(mode):
    """``torch.compile(fullgraph=True)`` traces the core's forward (given
    the positives' indices: a mask's ``nonzero`` has a data-dependent
    shape) and the autograd Function with its backward; both equal
    eager."""
    s, pos, quality, errors = _core_inputs()
    idx = pos.nonzero().squeeze(1)

    def terms(s, idx, quality, errors):
        t = error_driven_terms(s, idx, 0.5, mode, quality=quality,
                               loc_error=errors)
        return t.loss, t.parts, t.grad, t.loc_weight

    ref = terms(s, idx, quality, errors)
    got = torch.compile(terms, fullgraph=True, backend='eager')(
        s, idx, quality, errors)
    assert all(torch.equal(a, b) for a, b in zip(got, ref))

    def loss(x, idx, quality, errors):
        return error_driven_loss(x, idx, 0.5, mode, quality=quality,
                                 loc_error=errors)[0]

    x = s.clone().requires_grad_(True)
    torch.compile(loss, fullgraph=True, backend='aot_eager')(
        x, idx, quality, errors).backward()
    assert torch.equal(x.grad, ref[2])


# ---- the dense heads: what they add to the stock loss_by_feat

init_default_scope('mmdet')
NUM_CLASSES = 3
IMG = 64
HEAD_BOXES = [
    InstanceData(bboxes=torch.tensor([[4., 6., 40., 30.],
                                      [20., 24., 60., 62.]]),
                 labels=torch.tensor([0, 2])),
    InstanceData(bboxes=torch.tensor([[10., 10., 50., 50.]]),
                 labels=torch.tensor([1]))
]


def build_head(name, strides):
    atss = 'ATSS' in name
    train = dict(assigner=dict(type='ATSSAssigner', topk=9)) if atss else \
        dict(assigner=dict(type='MaxIoUAssigner', pos_iou_thr=0.5,
                           neg_iou_thr=0.4, min_pos_iou=0,
                           ignore_iof_thr=-1),
             sampler=dict(type='PseudoSampler'))
    cfg = dict(
        type=name, num_classes=NUM_CLASSES, in_channels=8, feat_channels=8,
        stacked_convs=1,
        anchor_generator=dict(type='AnchorGenerator', octave_base_scale=4,
                              scales_per_octave=1, ratios=[1.0],
                              strides=strides),
        bbox_coder=dict(type='DeltaXYWHBBoxCoder',
                        target_means=[.0, .0, .0, .0],
                        target_stds=[0.1, 0.1, 0.2, 0.2]),
        reg_decoded_bbox=True,
        loss_cls=dict(type='RankSortLoss' if 'RankSort' in name else
                      'ALRPLoss'),
        loss_bbox=dict(type='GIoULoss', loss_weight=1.0),
        train_cfg=ConfigDict(train, allowed_border=-1, pos_weight=-1,
                             debug=False))
    if atss:
        cfg['norm_cfg'] = dict(type='GN', num_groups=4, requires_grad=True)
    torch.manual_seed(0)
    head = MODELS.build(cfg)
    head.init_weights()
    return head.train()


def head_counts(name, strides):
    """Kernels and reads of the head's own part of ``loss_by_feat``: the
    stock part (targets, assignment: MMDetection's code, which reads the
    data on its own) runs on the CPU and records what it hands to the
    losses; the head's ranking over all anchors then runs on the meta
    device with those inputs, forward and backward to them."""
    head = build_head(name, strides)
    gen = torch.Generator().manual_seed(0)
    feats = tuple(torch.randn(2, 8, IMG // s, IMG // s, generator=gen)
                  for s in strides)
    metas = [dict(img_shape=(IMG, IMG), pad_shape=(IMG, IMG),
                  ori_shape=(IMG, IMG), scale_factor=(1.0, 1.0))] * 2
    taken = {}
    own = head.loss_cls_all_anchors

    def record(cls_scores, labels, label_weights, avg_factor=None):
        boxes = head._box_context[0]
        taken.update(args=(cls_scores, labels, label_weights, avg_factor),
                     preds=list(boxes.preds), targets=list(boxes.targets),
                     box_loss=head._box_context[1])
        return own(cls_scores, labels, label_weights, avg_factor)

    head.loss_cls_all_anchors = record
    head.loss_by_feat(*head(feats), HEAD_BOXES, metas)
    assert len(taken['args'][0]) == len(strides)
    cls_scores, labels, label_weights, avg_factor = taken['args']
    with ShadowMeta() as meta:
        meta.module_to_meta(head)
        scores = [meta.to_meta(t).requires_grad_(True) for t in cls_scores]
        preds = [meta.to_meta(t).requires_grad_(True)
                 for t in taken['preds']]
        recorder = _Recorded(preds, [meta.to_meta(t)
                                     for t in taken['targets']])
        head._box_context = (recorder, taken['box_loss'])
        labels = [meta.to_meta(t) for t in labels]
        label_weights = [meta.to_meta(t) for t in label_weights]
        meta.reset_counts()
        out = own(scores, labels, label_weights, avg_factor)
        # to the recorded inputs (no accumulation into leaves per level)
        torch.autograd.grad(losses_of(out), scores + preds,
                            allow_unused=True)
        head._box_context = None
    return meta


class _Recorded:
    """The per-level boxes the stock code scored, as the head's recorder
    holds them."""

    def __init__(self, preds, targets):
        self.preds, self.targets = preds, targets


@pytest.mark.parametrize('name', ['RankSortATSSHead', 'ALRPATSSHead',
                                  'RankSortRetinaHead'])
def test_head_reads_once_whatever_the_levels(name):
    """The head's own part of ``loss_by_feat`` (the ranking of all
    anchors with each positive's box) reads the data back once in all, and
    runs the same kernels for 2 and 4 FPN levels."""
    seen = {}
    for strides in ([8, 16], [8, 16, 32, 64]):
        meta = head_counts(name, strides)
        # the head's and the loss's syncs; MMDetection's box code (its
        # bbox_overlaps) copies its constants to the device on its own
        assert meta.total - meta.mmdet_uploads <= MAX_READS, meta.trace
        seen[len(strides)] = counts(meta)
    assert seen[2] == seen[4], seen


@pytest.mark.parametrize('reg_decoded', [True, False])
def test_rs_bbox_head_reads_once(reg_decoded, roi_head_inputs):
    """RS-R-CNN's bbox head on every RoI with the positives masked: its
    own code and the loss read the data back once (the loss's
    ``nonzero``), the accuracy it logs (``ScoreSpace.get_accuracy``, a
    masked count) not at all. Values equal the CPU path's."""
    head = MODELS.build(dict(
        type='RankSortBBoxHead', in_channels=8, fc_out_channels=16,
        roi_feat_size=7, num_classes=NUM_CLASSES,
        bbox_coder=dict(type='DeltaXYWHBBoxCoder',
                        target_means=[.0, .0, .0, .0],
                        target_stds=[0.1, 0.1, 0.2, 0.2]),
        reg_decoded_bbox=reg_decoded, loss_cls=dict(type='RankSortLoss'),
        loss_bbox=dict(type='GIoULoss') if reg_decoded else
        dict(type='SmoothL1Loss')))
    inputs = roi_head_inputs(head, NUM_CLASSES)
    ref = head.loss(*inputs)
    with ShadowMeta() as meta:
        meta.module_to_meta(head)
        ins = [meta.to_meta(t) for t in inputs]
        ins[0].requires_grad_(True)
        ins[1].requires_grad_(True)
        meta.reset_counts()
        out = head.loss(*ins)
        losses_of(out).backward()
        got = {k: meta.value(v) for k, v in out.items()}
    # MMDetection's box coder and bbox_overlaps copy their constants
    assert meta.total - meta.mmdet_uploads <= MAX_READS, meta.trace
    for key, value in ref.items():
        torch.testing.assert_close(got[key], value.detach(), rtol=1e-6,
                                   atol=0)
