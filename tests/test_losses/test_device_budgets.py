"""Budgets of the device path: kernel ops and host reads per training step.

On a GPU a rank loss costs what it launches and what it reads back (each
read a wait for the device), not its arithmetic. Both are counted here
without a GPU, on the ``meta`` device with CPU shadows
(``_device_modes.ShadowMeta``: the branches a CUDA tensor takes), for one
forward and backward at the sizes a detector trains with, memory full:

* at most :data:`MAX_OPS` kernel ops (views and allocations excluded) and
  no sync: no host read, no copy of host memory to the device (Rank &
  Sort, aLRP and AP-Loss: one read, the positives' ``nonzero``);
* the same number of ops at a larger batch, more classes and a full
  memory: the count does not grow with the data, and no shape depends on
  it (a read would be counted).

On failure the message gives the excess over the budget and lists the
package lines that launched the most ops. The values and gradients on
meta are the CPU's (``test_loss_contract``); the CPU path is checked
against the device path in ``test_ap_device``.
"""
import pytest
import torch
from _device_modes import ShadowMeta

import mmdet_rankloss  # noqa: F401  (registers the losses)
from mmdet.registry import MODELS

MAX_OPS = 100
#: The error-driven losses: at dense size :data:`MAX_OPS` too, and one read
#: each (the positives' ``nonzero``)
ERROR_DRIVEN_LOSSES = ('RankSortLoss', 'ALRPLoss', 'ErrorDrivenAPLoss')


def make_detection_batch(num_rois, num_classes, channels, seed, fg=0.25):
    g = torch.Generator().manual_seed(seed)
    labels = torch.full((num_rois, ), num_classes, dtype=torch.long)
    is_fg = torch.rand(num_rois, generator=g) < fg
    labels[is_fg] = torch.randint(0, num_classes, (int(is_fg.sum()), ),
                                  generator=g)
    cls_score = torch.randn(num_rois, channels, generator=g)
    weight = (torch.rand(num_rois, generator=g) > 0.05).float()
    return cls_score, labels, weight


def count_step(cfg, num_rois, num_classes, channels, steps=1):
    """ShadowMeta of the last of ``steps`` training calls (forward and
    backward); the earlier ones fill the memory."""
    with ShadowMeta() as meta:
        loss = meta.module_to_meta(MODELS.build(cfg)).train()
        for step in range(steps):
            x, labels, weight = make_detection_batch(num_rois, num_classes,
                                                     channels, step)
            xm = meta.to_meta(x).requires_grad_(True)
            lm, wm = meta.to_meta(labels), meta.to_meta(weight)
            meta.reset_counts()
            # the default module: a Tensor, no diagnostics
            loss(xm, lm, wm, avg_factor=float(num_rois)).backward()
    return meta


RAMBO_ROI = dict(type='RaMBOAPLoss', memory=7)
RAMBO_DENSE = dict(type='RaMBOAPLoss', score_space='sigmoid', margin=0.0,
                   memory=0)
# the dense mix of configs/dense/_base_/rambo-ap.py
MIXED_DENSE = dict(type='MixedRankLoss',
                   rank_loss=dict(type='RaMBOAPLoss', score_space='logits',
                                  margin=0.0, memory=0),
                   aux_loss=dict(type='FocalLoss', use_sigmoid=True,
                                 gamma=2.0, alpha=0.25),
                   aux_name='loss_focal')

# (config, RoIs, classes, classifier channels, calls) at the sizes of a
# training step: a Faster R-CNN RoI head of 2 and of 16 images x 512 RoIs
# (VOC, 20 classes + background; memory 7 full after 8 calls) and a dense
# head over 100k anchors x 80 classes
SIZES = {
    'RaMBOAPLoss, 2 x 512 RoIs x 21, tau 7': (RAMBO_ROI, 1024, 20, 21, 8),
    'RaMBOAPLoss, 2 x 512 RoIs x 21, tau 7, positive_rank_grad': (
        dict(RAMBO_ROI, positive_rank_grad=True), 1024, 20, 21, 8),
    'RaMBOAPLoss, 16 x 512 RoIs x 21, tau 7': (RAMBO_ROI, 8192, 20, 21, 8),
    'RaMBOAPLoss dense, 100k x 80, sigmoid': (RAMBO_DENSE, 100_000, 80, 80,
                                              1),
    'RaMBOAPLoss dense, 100k x 80, logits': (dict(
        RAMBO_DENSE, score_space='logits'), 100_000, 80, 81, 1),
    'MixedRankLoss dense, 100k x 80, logits + focal': (MIXED_DENSE, 100_000,
                                                       80, 81, 1),
}


def budget_message(meta, ops=None):
    """The excess over :data:`MAX_OPS` and the package lines that ran
    the most ops (``ops``: the count held to the budget, if not all)."""
    ops = meta.num_ops if ops is None else ops
    return (f'{ops} kernel ops, {ops - MAX_OPS} over the budget of '
            f'{MAX_OPS}\n{meta.op_report(30)}')


def aux_ops(cfg, num_rois, num_classes, channels, steps=1):
    """Kernel ops of a :class:`MixedRankLoss`'s auxiliary loss alone
    (MMDetection's own, not counted against the rank loss's budget; on
    CUDA its focal loss is one mmcv kernel each way, on meta the Python
    version runs), on the columns it gets."""
    if cfg['type'] != 'MixedRankLoss':
        return 0
    with ShadowMeta() as meta:
        aux = meta.module_to_meta(MODELS.build(cfg['aux_loss']))
        x, labels, weight = make_detection_batch(num_rois, num_classes,
                                                 channels, steps - 1)
        xm = meta.to_meta(x[:, :num_classes]).requires_grad_(True)
        meta.reset_counts()
        aux(xm, meta.to_meta(labels), meta.to_meta(weight),
            avg_factor=float(num_rois)).backward()
    assert meta.total == 0, meta.trace
    return meta.num_ops


@pytest.mark.slow
@pytest.mark.parametrize('case', list(SIZES))
def test_ops_and_host_reads_at_training_size(case):
    meta = count_step(*SIZES[case])
    assert (meta.reads, meta.uploads) == (0, 0), meta.trace
    ops = meta.num_ops - aux_ops(*SIZES[case])
    assert ops <= MAX_OPS, budget_message(meta, ops)


@pytest.mark.slow
@pytest.mark.parametrize('name', ERROR_DRIVEN_LOSSES)
def test_error_driven_ops_and_one_read_at_dense_size(name):
    """Rank & Sort, aLRP and AP-Loss over 100k anchors x 80 classes with
    1,000 positives: one read (the positives' ``nonzero``, which sizes the
    ``P x P`` relations), no copy to the device, and at most
    :data:`MAX_OPS` ops."""
    from test_error_driven_device import dense_batch, run_meta
    *_, meta = run_meta(name, dense_batch(100_000, 80, 1000))
    assert dict(meta.syncs) == {'nonzero': 1}, meta.trace
    assert not meta.no_meta_kernel, meta.no_meta_kernel
    assert meta.num_ops <= MAX_OPS, budget_message(meta)


@pytest.mark.parametrize('cfg, sorts', [
    (RAMBO_ROI, 2), (dict(RAMBO_ROI, margin=0.0), 2), (RAMBO_DENSE, 2),
    (dict(RAMBO_ROI, positive_rank_grad=True), 4)
], ids=['roi', 'roi-no-margin', 'dense', 'roi-positive-rank-grad'])
def test_sorts_per_call(cfg, sorts):
    """Full sorts of a training call on the device path, memory full: one
    of int64 keys (row, then the score's order) for both rankings, per
    class and across classes, and one for Algorithm 1's second ranking of
    both; with ``positive_rank_grad`` (stacked rankings) a sort per
    ranking and group, 4."""
    channels = 4 + (cfg.get('score_space') != 'sigmoid')
    meta = count_step(cfg, 64, 4, channels, cfg['memory'] + 1)
    assert meta.total == 0, meta.trace
    assert meta.ops['aten::sort'] == sorts, meta.op_report(30)


@pytest.mark.parametrize('cfg', [
    RAMBO_ROI, dict(RAMBO_ROI, positive_rank_grad=True), RAMBO_DENSE,
    MIXED_DENSE
], ids=['roi', 'roi-positive-rank-grad', 'dense', 'mixed'])
def test_op_count_does_not_grow_with_the_data(cfg):
    """Small sizes stand for large ones: the count is the same at twice
    the items, more classes and (with a memory) a memory full or not."""
    sigmoid = cfg.get('score_space') == 'sigmoid'
    counts = {}
    for num_rois, num_classes, steps in [(64, 4, 8), (128, 4, 8),
                                         (64, 9, 8), (64, 4, 3)]:
        if steps == 3 and not cfg.get('memory'):
            continue
        channels = num_classes + (0 if sigmoid else 1)
        meta = count_step(cfg, num_rois, num_classes, channels, steps)
        counts[(num_rois, num_classes, steps)] = meta.num_ops
        assert meta.total == 0, meta.trace
    assert len(set(counts.values())) == 1, counts


@pytest.mark.parametrize('extra', [{}, dict(positive_rank_grad=True),
                                   dict(log_diagnostics=True)], ids=str)
@pytest.mark.parametrize('space', ['softmax', 'sigmoid', 'logits'])
def test_no_sync_of_either_kind_in_any_score_space(space, extra):
    """No host read and no copy of host memory to the device, memory
    full (3 after 4 calls), whatever the score space and settings."""
    num_classes = 4
    channels = num_classes + (space != 'sigmoid')
    with ShadowMeta() as meta:
        loss = meta.module_to_meta(MODELS.build(dict(
            type='RaMBOAPLoss', memory=3, score_space=space,
            **extra))).train()
        for step in range(4):
            x, labels, weight = make_detection_batch(64, num_classes,
                                                     channels, step)
            xm = meta.to_meta(x).requires_grad_(True)
            lm, wm = meta.to_meta(labels), meta.to_meta(weight)
            meta.reset_counts()
            out = loss(xm, lm, wm, avg_factor=64.0)
            if isinstance(out, dict):
                out = sum(v for k, v in out.items() if k.startswith('loss'))
            out.backward()
    assert (meta.reads, meta.uploads) == (0, 0), meta.trace


@pytest.mark.parametrize('head_type', ['RaMBORetinaHead', 'RaMBOATSSHead'])
@pytest.mark.parametrize('loss_cfg', [RAMBO_DENSE, MIXED_DENSE],
                         ids=['rambo', 'mixed'])
def test_dense_head_rank_loss_does_not_grow_with_levels(head_type, loss_cfg):
    """The dense heads' ``loss_cls`` over all levels and images: no read,
    and the same ops for 3 and 5 FPN levels (one concatenation each)."""
    head = MODELS.build(
        dict(type=head_type, num_classes=4, in_channels=8, feat_channels=8,
             stacked_convs=1, loss_cls=loss_cfg,
             anchor_generator=dict(type='AnchorGenerator', ratios=[1.0],
                                   octave_base_scale=8, scales_per_octave=1,
                                   strides=[8, 16, 32]),
             bbox_coder=dict(type='DeltaXYWHBBoxCoder'),
             **(dict(norm_cfg=dict(type='GN', num_groups=4))
                if head_type == 'RaMBOATSSHead' else {})))
    counts = []
    for levels in (3, 5):
        parts = [make_detection_batch(40 * (level + 1), 4, 4, level)
                 for level in range(levels)]
        with ShadowMeta() as meta:
            head.loss_cls = meta.module_to_meta(head.loss_cls).train()
            # the levels as views of one leaf: a leaf per level would add
            # a gradient copy per level that a head's graph does not have
            leaf = meta.to_meta(torch.cat([x for x, _, _ in parts]))
            scores = leaf.requires_grad_(True).split(
                [len(x) for x, _, _ in parts])
            labels = [meta.to_meta(y) for _, y, _ in parts]
            weights = [meta.to_meta(w) for _, _, w in parts]
            meta.reset_counts()
            out = head.loss_cls_all_anchors(scores, labels, weights,
                                            avg_factor=10.0)
            sum(v for k, v in out.items() if k.startswith('loss')).backward()
        assert meta.total == 0, meta.trace
        counts.append(meta.num_ops)
    assert counts[0] == counts[1], counts
