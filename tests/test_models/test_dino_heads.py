"""The DINO heads of :mod:`mmdet_rankloss.models.dino_heads` and the match
cost of :mod:`mmdet_rankloss.models.match_costs`.

* Rank & Sort: a call's losses equal Rank & Sort evaluated directly (the
  functional ``rank_sort_loss`` on a mask of the positives, IoUs from a
  formula here) on hand-built matched targets; the box terms are the mean
  L1 / GIoU rescaled to that value; joint ranking over the layers equals RS
  on the concatenated calls.
* aLRP: a call's two components equal aLRP Loss evaluated directly (the
  functional ``alrp_loss`` on a mask of the positives, ``(1 - GIoU) / 2``
  errors from a formula here), value and gradients (logits and boxes); the
  loss dict has no ``loss_bbox`` keys.
* RaMBO: with the rank term weighted 0 the head's whole loss dict is the
  stock focal ``DINOHead``'s on the same outputs (matching, denoising,
  encoder).
* No read of the data (aLRP: ``ALRPLoss``'s one) and no copy to the device
  in a call's losses (``ShadowMeta``: the CUDA path without a GPU).
* ``HighOrderMatchCost`` against ``-p * IoU ** alpha`` from loops.
"""
import pytest
import torch
from helpers import device_modes

from mmdet_rankloss.losses import alrp_loss, rank_sort_loss

ShadowMeta = device_modes().ShadowMeta

NUM_CLASSES = 4


def _head(type_name, loss_cls, **kwargs):
    from mmengine.registry import init_default_scope

    from mmdet.registry import MODELS
    init_default_scope('mmdet')
    torch.manual_seed(0)
    return MODELS.build(
        dict(type=type_name, num_classes=NUM_CLASSES, embed_dims=16,
             num_pred_layer=4, as_two_stage=True, loss_cls=loss_cls,
             sync_cls_avg_factor=False, **kwargs,
             train_cfg=dict(assigner=dict(
                 type='HungarianAssigner',
                 match_costs=[
                     dict(type='FocalLossCost', weight=2.0),
                     dict(type='BBoxL1Cost', weight=5.0, box_format='xywh'),
                     dict(type='IoUCost', iou_mode='giou', weight=2.0)]))))


RS = dict(type='RankSortLoss', zero_quality_as_negative=False)
ALRP = dict(type='ALRPLoss')


def _iou(a, b):
    """IoU of xyxy box pairs, row by row, from the definition."""
    w = (torch.min(a[:, 2], b[:, 2]) - torch.max(a[:, 0], b[:, 0])).clamp(0)
    h = (torch.min(a[:, 3], b[:, 3]) - torch.max(a[:, 1], b[:, 1])).clamp(0)
    inter = w * h
    area = (a[:, 2:] - a[:, :2]).prod(1) + (b[:, 2:] - b[:, :2]).prod(1)
    return inter / (area - inter)


def _giou(a, b):
    """GIoU of xyxy box pairs, row by row, from the definition."""
    iou = _iou(a, b)
    w = (torch.min(a[:, 2], b[:, 2]) - torch.max(a[:, 0], b[:, 0])).clamp(0)
    h = (torch.min(a[:, 3], b[:, 3]) - torch.max(a[:, 1], b[:, 1])).clamp(0)
    union = (a[:, 2:] - a[:, :2]).prod(1) + (b[:, 2:] - b[:, :2]).prod(1) \
        - w * h
    hull = (torch.max(a[:, 2:], b[:, 2:]) - torch.min(a[:, :2], b[:, :2]))
    hull = hull.prod(1)
    return iou - (hull - union) / hull


def _xyxy(cxcywh):
    c, wh = cxcywh[:, :2], cxcywh[:, 2:]
    return torch.cat([c - wh / 2, c + wh / 2], 1)


def _call_inputs(bs=2, nq=12, seed=0):
    """A call's outputs and hand-built targets: queries 1, 4 (image 0) and
    0, 7, 9 (image 1) matched."""
    gen = torch.Generator().manual_seed(seed)
    cls_scores = torch.randn(bs, nq, NUM_CLASSES, generator=gen)
    centres = torch.rand(bs, nq, 2, generator=gen) * 0.6 + 0.2
    sizes = torch.rand(bs, nq, 2, generator=gen) * 0.2 + 0.1
    bbox_preds = torch.cat([centres, sizes], -1)
    labels = torch.full((bs * nq, ), NUM_CLASSES)
    rows = torch.tensor([1, 4, nq, nq + 7, nq + 9])
    labels[rows] = torch.tensor([0, 3, 3, 1, 2])
    targets = torch.zeros(bs * nq, 4)
    targets[rows] = bbox_preds.reshape(-1, 4)[rows] + 0.03 * torch.randn(
        5, 4, generator=gen)
    targets[rows, 2:] = targets[rows, 2:].abs()
    weights = torch.zeros(bs * nq, 4)
    weights[rows] = 1
    split = lambda t: list(t.split(nq))  # noqa: E731
    target_tuple = (split(labels), split(torch.ones(bs * nq)),
                    split(targets), split(weights), 5, bs * nq - 5)
    metas = [dict(img_shape=(96, 128)), dict(img_shape=(128, 80))]
    return cls_scores, bbox_preds, target_tuple, metas, rows


def test_rank_sort_call_is_rank_sort_on_the_matched_targets():
    head = _head('RankSortDINOHead', RS)
    cls_scores, bbox_preds, targets, metas, rows = _call_inputs()
    cls_scores.requires_grad_(True)
    bbox_preds.requires_grad_(True)
    loss_cls, loss_bbox, loss_iou = head.call_losses(
        cls_scores, bbox_preds, targets, metas, 'matched')
    labels = torch.cat(targets[0])
    box_targets = torch.cat(targets[2])
    positives = torch.zeros(24, NUM_CLASSES, dtype=torch.bool)
    positives[rows, labels[rows]] = True
    quality = torch.zeros(24, NUM_CLASSES)
    pred = bbox_preds.detach().reshape(-1, 4)
    quality[rows, labels[rows]] = _iou(_xyxy(pred[rows]),
                                       _xyxy(box_targets[rows]))
    expected = rank_sort_loss(cls_scores.detach().reshape(-1, NUM_CLASSES),
                              positives, quality)
    assert loss_cls.item() == pytest.approx(expected.item(), rel=1e-6)
    # the box terms have the value of the RS term ...
    assert loss_bbox.item() == pytest.approx(expected.item(), rel=1e-6)
    assert loss_iou.item() == pytest.approx(expected.item(), rel=1e-6)
    # ... and the gradient of the mean L1 (loss weight 5) times L_RS / L1
    l1 = 5 * (pred[rows] - box_targets[rows]).abs().sum() / 5
    grad, = torch.autograd.grad(loss_bbox, bbox_preds)
    sign = torch.zeros(24, 4)
    sign[rows] = torch.sign(pred[rows] - box_targets[rows])
    torch.testing.assert_close(
        grad.reshape(-1, 4), sign * (expected / l1).item(), rtol=1e-5,
        atol=1e-7)
    # the RS update reaches the logits; the IoU labels are detached
    grad_cls, = torch.autograd.grad(loss_cls, cls_scores)
    assert grad_cls.abs().sum() > 0


def test_alrp_call_is_alrp_loss_on_the_matched_targets():
    head = _head('ALRPDINOHead', ALRP)
    head.loss_cls.sb_weight.fill_(7.0)  # the head uses the loss's weight
    cls_scores, bbox_preds, targets, metas, rows = _call_inputs()
    cls_scores.requires_grad_(True)
    bbox_preds.requires_grad_(True)
    loss_cls, loss_bbox, loss_iou = head.call_losses(
        cls_scores, bbox_preds, targets, metas, 'matched')
    assert loss_bbox is None  # L1 and GIoU: replaced by loss_iou
    labels = torch.cat(targets[0])
    box_targets = torch.cat(targets[2])
    positives = torch.zeros(24, NUM_CLASSES, dtype=torch.bool)
    positives[rows, labels[rows]] = True
    # the direct evaluation, on copies (normalised boxes: GIoU does not
    # change with the image's scale)
    scores = cls_scores.detach().reshape(-1, NUM_CLASSES).requires_grad_()
    boxes = bbox_preds.detach().reshape(-1, 4).requires_grad_()
    errors = torch.zeros(24, NUM_CLASSES)
    errors = errors.index_put(
        (rows, labels[rows]),
        (1 - _giou(_xyxy(boxes[rows]), _xyxy(box_targets[rows]))) / 2)
    expected = alrp_loss(scores, positives, errors, sb_weight=7.0)
    cls_only = alrp_loss(scores.detach(), positives)  # L_cls: no errors
    assert loss_cls.item() == pytest.approx(cls_only.item(), rel=1e-6)
    assert loss_iou.item() == pytest.approx(
        (expected - cls_only).item(), rel=1e-5)
    assert loss_iou.item() > 0.1 * loss_cls.item()  # not a vanishing term
    grads = torch.autograd.grad(loss_cls + loss_iou,
                                (cls_scores, bbox_preds))
    expected_grads = torch.autograd.grad(expected, (scores, boxes))
    for grad, want in zip(grads, expected_grads):
        assert want.abs().sum() > 0
        torch.testing.assert_close(grad.reshape(want.shape), want,
                                   rtol=1e-5, atol=1e-7)


def test_alrp_loss_dict_has_no_l1_terms():
    inputs = _outputs()
    stock = _head('DINOHead', dict(type='FocalLoss', use_sigmoid=True,
                                   loss_weight=1.0)).loss_by_feat(*inputs)
    head = _head('ALRPDINOHead', ALRP)
    losses = head.loss_by_feat(*inputs)
    assert set(losses) == {k for k in stock if 'loss_bbox' not in k}
    assert len(losses) == 2 * (2 * 3 + 1)
    assert all(torch.isfinite(v).item() for v in losses.values())
    # what ALRPSelfBalanceHook reads: L_aLRP and L_loc of the 13 calls
    loc = sum(v for k, v in losses.items() if 'loss_iou' in k) / 50
    total = sum(v for k, v in losses.items() if 'loss_cls' in k) + loc
    torch.testing.assert_close(
        head.loss_cls._sb_sums,
        torch.stack([total, loc]).detach().to(torch.float64), rtol=1e-5,
        atol=0)


def _outputs(layers=4, bs=2, nq=30, dn=8, seed=0):
    """DINOHead.loss_by_feat inputs: 3 decoder layers of 30 matching and 8
    denoising queries (2 groups of 2 ground truths), and the encoder's
    proposals, for 2 images with 2 ground truths each."""
    from mmengine.structures import InstanceData
    gen = torch.Generator().manual_seed(seed)
    cls = torch.randn(layers - 1, bs, dn + nq, NUM_CLASSES, generator=gen)
    box = torch.cat([torch.rand(layers - 1, bs, dn + nq, 2, generator=gen)
                     * 0.6 + 0.2,
                     torch.rand(layers - 1, bs, dn + nq, 2, generator=gen)
                     * 0.3 + 0.1], -1)
    enc_cls = torch.randn(bs, nq, NUM_CLASSES, generator=gen)
    enc_box = box[0, :, dn:].clone()
    gts = [InstanceData(bboxes=torch.tensor([[4., 6., 40., 30.],
                                             [20., 24., 60., 62.]]),
                        labels=torch.tensor([1, NUM_CLASSES - 1]))
           for _ in range(bs)]
    metas = [dict(img_shape=(64, 64)) for _ in range(bs)]
    dn_meta = dict(num_denoising_queries=dn, num_denoising_groups=2)
    return cls, box, enc_cls, enc_box, gts, metas, dn_meta


def test_joint_ranking_is_rank_sort_on_the_concatenated_calls(monkeypatch):
    inputs = _outputs()
    per_call = _head('RankSortDINOHead', RS)
    seen = []
    rank = per_call._rank_sort

    def spy(flat, pos_idx, negatives, quality):
        seen.append((flat.detach(), pos_idx, negatives, quality))
        return rank(flat, pos_idx, negatives, quality)

    monkeypatch.setattr(per_call, '_rank_sort', spy)
    separate = per_call.loss_by_feat(*inputs)
    assert len(seen) == 3 + 1 + 3  # decoder layers, encoder, denoising
    joint = _head('RankSortDINOHead', RS,
                  rank_layers_together=True).loss_by_feat(*inputs)
    assert set(joint) == set(separate)
    for keys, calls in (([k for k in joint if 'loss_cls' in k
                          and 'dn' not in k], seen[:4]),
                        ([k for k in joint if 'dn_loss_cls' in k],
                         seen[4:])):
        scores = torch.cat([c[0] for c in calls])
        positives = torch.zeros_like(scores, dtype=torch.bool)
        quality = torch.zeros_like(scores)
        offset = 0
        for flat, pos_idx, _, q in calls:
            positives[offset + pos_idx] = True
            quality[offset + pos_idx] = q
            offset += flat.shape[0]
        expected = rank_sort_loss(scores, positives, quality).item()
        assert len(keys) == len(calls)
        for key in keys:
            assert joint[key].item() == pytest.approx(expected, rel=1e-6)
            box_key = key.replace('loss_cls', 'loss_bbox')
            assert joint[box_key].item() == pytest.approx(expected, rel=1e-6)


def test_rambo_head_with_rank_weight_0_is_the_stock_head():
    inputs = _outputs()
    focal = dict(type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25,
                 loss_weight=1.0)
    mix = dict(type='MixedRankLoss',
               rank_loss=dict(type='RaMBOAPLoss', score_space='logits',
                              margin=0.0, memory=0, loss_weight=0.0),
               aux_loss=focal, aux_name='loss_focal')
    stock = _head('DINOHead', focal).loss_by_feat(*inputs)
    ours = _head('RaMBODINOHead', mix).loss_by_feat(*inputs)
    assert set(ours) == set(stock) and len(stock) == 3 * (2 * 3 + 1)
    for key, value in stock.items():
        assert ours[key].item() == pytest.approx(value.item(), rel=1e-5), key


@pytest.mark.parametrize('type_name,loss_cls',
                         [('RankSortDINOHead', RS), ('ALRPDINOHead', ALRP)])
def test_sigmoid_head_prediction_and_init(type_name, loss_cls):
    head = _head(type_name, loss_cls)
    assert head.cls_out_channels == NUM_CLASSES
    head.init_weights()
    bias = head.cls_branches[0].bias
    assert torch.allclose(bias, torch.full_like(bias, -4.59512), atol=1e-4)
    cls, box, *_ = _outputs()
    results = head.predict_by_feat(cls[:, :, 8:], box[:, :, 8:],
                                   [dict(img_shape=(64, 64),
                                         scale_factor=(1., 1.))] * 2,
                                   rescale=False)
    scores = results[0].scores
    torch.testing.assert_close(
        scores, cls[-1, 0, 8:].sigmoid().flatten().topk(len(scores))[0])


def test_the_heads_refuse_what_they_cannot_serve():
    with pytest.raises(ValueError, match='zero_quality_as_negative'):
        _head('RankSortDINOHead', dict(type='RankSortLoss'))
    with pytest.raises(ValueError, match='RankSortLoss'):
        _head('RankSortDINOHead', dict(type='FocalLoss', use_sigmoid=True))
    with pytest.raises(ValueError, match='terms'):
        _head('RaMBODINOHead', dict(type='FocalLoss', use_sigmoid=True))
    with pytest.raises(ValueError, match='ALRPLoss'):
        _head('ALRPDINOHead', RS)
    with pytest.raises(ValueError, match='score_space'):
        _head('ALRPDINOHead', dict(ALRP, score_space='sigmoid'))


@pytest.mark.parametrize('type_name,loss_cls,reads', [
    ('RankSortDINOHead', RS, 0),
    ('RaMBODINOHead', dict(type='MixedRankLoss',
                           rank_loss=dict(type='RaMBOAPLoss',
                                          score_space='logits', margin=0.0,
                                          memory=0),
                           aux_loss=dict(type='FocalLoss', use_sigmoid=True),
                           aux_name='loss_focal'), 0),
    ('ALRPDINOHead', ALRP, 1),  # ALRPLoss's nonzero
])
def test_a_call_reads_nothing_and_copies_nothing(type_name, loss_cls, reads):
    head = _head(type_name, loss_cls)
    cls_scores, bbox_preds, targets, metas, _ = _call_inputs()
    with ShadowMeta() as meta:
        head = meta.module_to_meta(head)
        cls_scores = meta.to_meta(cls_scores).requires_grad_(True)
        bbox_preds = meta.to_meta(bbox_preds).requires_grad_(True)
        on_device = tuple([meta.to_meta(t) for t in part]
                          if isinstance(part, list) else part
                          for part in targets)
        losses = head.call_losses(cls_scores, bbox_preds, on_device, metas,
                                  'matched')
        sum(v for v in losses if v is not None).backward()
    assert meta.reads == reads, meta.trace
    assert meta.syncs['copy to device'] == 0, meta.trace


def test_high_order_match_cost_is_the_formula():
    from mmengine.structures import InstanceData

    from mmdet.registry import TASK_UTILS
    gen = torch.Generator().manual_seed(3)
    xy = torch.rand(7, 2, generator=gen) * 50
    boxes = torch.cat([xy, xy + 5 + torch.rand(7, 2, generator=gen) * 30], 1)
    logits = torch.randn(7, NUM_CLASSES, generator=gen)
    gt = InstanceData(bboxes=boxes[[2, 5]] + 3.0,
                      labels=torch.tensor([3, 0]))
    cost = TASK_UTILS.build(dict(type='HighOrderMatchCost', alpha=4.0,
                                 weight=2.0))(
        InstanceData(scores=logits, bboxes=boxes), gt)
    for i in range(7):
        for j in range(2):
            p = torch.sigmoid(logits[i, gt.labels[j]])
            iou = _iou(boxes[i:i + 1], gt.bboxes[j:j + 1])[0]
            assert cost[i, j].item() == pytest.approx(
                (-2.0 * p * iou**4).item(), rel=1e-5, abs=1e-7)
    assert cost[2, 0] < cost[3, 0]  # the overlapping query is cheaper
    with pytest.raises(ValueError, match='alpha'):
        TASK_UTILS.build(dict(type='HighOrderMatchCost', alpha=-1))
