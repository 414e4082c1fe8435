"""Kernel ops and host reads of the FCOS heads' own part of a training
step, on the ``meta`` device with CPU shadows (the CUDA code path without a
GPU; ``_device_modes.ShadowMeta``), as ``test_device_budgets`` and
``test_error_driven_device`` count them for the anchor heads.

The stock part of ``loss_by_feat`` (FCOS's targets and its ``nonzero`` of
the positives: MMDetection's code, which reads the data on its own) runs on
the CPU and records what it hands to the losses; the head's ranking of all
points (and, for RS, each positive's box) then runs on meta, forward and
backward to those inputs. RaMBO heads read nothing back; the RS head reads
once (the loss's ``nonzero``, which sizes its ``P x P`` relations); none
copies host memory to the device. No count grows with the FPN levels.
"""
import pytest
import torch
from mmengine.config import ConfigDict
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData

import mmdet_rankloss  # noqa: F401
from mmdet.registry import MODELS

from _device_modes import ShadowMeta  # tests/test_losses on sys.path

init_default_scope('mmdet')
SIZE = 64
MIXED = dict(type='MixedRankLoss',
             rank_loss=dict(type='RaMBOAPLoss', score_space='logits',
                            margin=0.0, memory=0),
             aux_loss=dict(type='FocalLoss', use_sigmoid=True, gamma=2.0,
                           alpha=0.25),
             aux_name='loss_focal')
#: FCOS's regress ranges for 2 and 4 levels
RANGES = {2: ((-1, 16), (16, 1e8)),
          4: ((-1, 16), (16, 32), (32, 64), (64, 1e8))}
HEADS = {
    'RaMBOFCOSHead, RaMBO': ('RaMBOFCOSHead',
                             dict(type='RaMBOAPLoss', score_space='sigmoid',
                                  margin=0.0, memory=0), 0),
    'RaMBOFCOSHead, RaMBO + focal': ('RaMBOFCOSHead', MIXED, 0),
    'RankSortFCOSHead': ('RankSortFCOSHead', dict(type='RankSortLoss'), 1),
}


def own_part_counts(head_type, loss_cls, strides):
    """ShadowMeta of the head's own part of ``loss_by_feat`` (module
    doc)."""
    torch.manual_seed(0)
    head = MODELS.build(dict(
        type=head_type, num_classes=3, in_channels=8, feat_channels=8,
        stacked_convs=1, strides=strides, loss_cls=loss_cls,
        loss_bbox=dict(type='GIoULoss'), norm_on_bbox=True,
        center_sampling=True, centerness_on_reg=True,
        regress_ranges=RANGES[len(strides)],
        norm_cfg=dict(type='GN', num_groups=4, requires_grad=True))).train()
    gen = torch.Generator().manual_seed(0)
    feats = tuple(torch.randn(2, 8, SIZE // s, SIZE // s, generator=gen)
                  for s in strides)
    gts = [InstanceData(bboxes=torch.tensor([[4., 6., 40., 30.],
                                             [20., 24., 60., 62.]]),
                        labels=torch.tensor([0, 2])),
           InstanceData(bboxes=torch.tensor([[10., 10., 50., 50.]]),
                        labels=torch.tensor([1]))]
    metas = [dict(img_shape=(SIZE, SIZE), pad_shape=(SIZE, SIZE))] * 2
    taken = {}
    own = head.loss_cls_all_anchors

    def record(*args):
        context = getattr(head, '_box_context', None)
        taken.update(args=args, boxes=context and (
            list(context[0].preds), list(context[0].targets), context[1]))
        return own(*args)

    head.loss_cls_all_anchors = record
    head.loss_by_feat(*head(feats), gts, metas)
    scores, labels, weights, avg_factor = taken['args']
    with ShadowMeta() as meta:
        meta.module_to_meta(head)
        scores = [meta.to_meta(t).requires_grad_(True) for t in scores]
        leaves = list(scores)
        if taken['boxes'] is not None:
            preds, targets, box_loss = taken['boxes']
            preds = [meta.to_meta(t).requires_grad_(True) for t in preds]
            leaves += preds
            head._box_context = (ConfigDict(
                preds=preds, targets=[meta.to_meta(t) for t in targets]),
                                 box_loss)
        labels = [meta.to_meta(t) for t in labels]
        weights = [meta.to_meta(t) for t in weights]
        meta.reset_counts()
        out = own(scores, labels, weights, avg_factor)
        total = sum(v for k, v in out.items()
                    if k.startswith('loss') and v is not None)
        torch.autograd.grad(total, leaves, allow_unused=True)
        head._box_context = None
    return meta


@pytest.mark.parametrize('case', list(HEADS))
def test_reads_and_ops_of_the_head_do_not_grow_with_levels(case):
    head_type, loss_cls, reads = HEADS[case]
    counts = []
    for strides in ([8, 16], [8, 16, 32, 64]):
        meta = own_part_counts(head_type, loss_cls, strides)
        # MMDetection's box code (bbox_overlaps) copies its eps itself
        assert (meta.reads, meta.uploads - meta.mmdet_uploads) == (
            reads, 0), meta.trace
        counts.append(meta.num_ops)
    assert counts[0] == counts[1], counts

