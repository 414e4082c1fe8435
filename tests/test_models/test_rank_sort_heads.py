"""RS / aLRP dense heads and the RS bbox head: one loss forward/backward
through ``loss_by_feat`` / ``loss`` on tiny inputs, and what each head
changes (IoU labels, value-weighted box loss, no centerness)."""
import copy

import pytest
import torch
from mmengine.config import ConfigDict
from mmengine.registry import init_default_scope
from mmengine.structures import InstanceData

import mmdet_rankloss  # noqa: F401
from mmdet.registry import MODELS
from mmdet_rankloss.losses import ALRPLoss, RankSortLoss

init_default_scope('mmdet')
NUM_CLASSES = 3
IMG = 64
STRIDES = [8, 16, 32]

ANCHORS = dict(type='AnchorGenerator', octave_base_scale=4,
               scales_per_octave=1, ratios=[1.0], strides=STRIDES)
CODER = dict(type='DeltaXYWHBBoxCoder', target_means=[.0, .0, .0, .0],
             target_stds=[0.1, 0.1, 0.2, 0.2])
RETINA_TRAIN = dict(
    assigner=dict(type='MaxIoUAssigner', pos_iou_thr=0.5, neg_iou_thr=0.4,
                  min_pos_iou=0, ignore_iof_thr=-1),
    sampler=dict(type='PseudoSampler'), allowed_border=-1, pos_weight=-1,
    debug=False)
ATSS_TRAIN = dict(assigner=dict(type='ATSSAssigner', topk=9),
                  allowed_border=-1, pos_weight=-1, debug=False)
TEST = dict(nms_pre=100, min_bbox_size=0, score_thr=0.0,
            nms=dict(type='nms', iou_threshold=0.5), max_per_img=20)
HEADS = ['RankSortRetinaHead', 'RankSortATSSHead', 'ALRPRetinaHead',
         'ALRPATSSHead']


def head_cfg(name, **overrides):
    atss = 'ATSS' in name
    cfg = dict(
        type=name, num_classes=NUM_CLASSES, in_channels=8, feat_channels=8,
        stacked_convs=1, anchor_generator=ANCHORS, bbox_coder=CODER,
        reg_decoded_bbox=True,
        loss_cls=dict(type='RankSortLoss' if 'RankSort' in name else
                      'ALRPLoss'),
        loss_bbox=dict(type='GIoULoss', loss_weight=1.0),
        train_cfg=ConfigDict(ATSS_TRAIN if atss else RETINA_TRAIN),
        test_cfg=ConfigDict(TEST))
    if atss:
        cfg['norm_cfg'] = dict(type='GN', num_groups=4, requires_grad=True)
    cfg.update(overrides)
    return cfg


def batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    feats = tuple(
        torch.randn(2, 8, IMG // s, IMG // s, generator=g) for s in STRIDES)
    gts = [
        InstanceData(bboxes=torch.tensor([[4., 6., 40., 30.],
                                          [20., 24., 60., 62.]]),
                     labels=torch.tensor([0, 2])),
        InstanceData(bboxes=torch.tensor([[10., 10., 50., 50.]]),
                     labels=torch.tensor([1]))
    ]
    metas = [dict(img_shape=(IMG, IMG), pad_shape=(IMG, IMG),
                  ori_shape=(IMG, IMG), scale_factor=(1.0, 1.0))] * 2
    return feats, gts, metas


def build(name, **overrides):
    torch.manual_seed(0)
    head = MODELS.build(head_cfg(name, **overrides))
    head.init_weights()
    return head.train()


@pytest.mark.parametrize('name', HEADS)
def test_loss_by_feat_forward_backward(name):
    head = build(name)
    feats, gts, metas = batch()
    losses = head.loss_by_feat(*head(feats), gts, metas)
    total = sum(v for k, v in losses.items() if k.startswith('loss'))
    assert torch.isfinite(total) and total.item() > 0
    total.backward()
    prefix = 'atss' if 'ATSS' in name else 'retina'
    assert getattr(head, f'{prefix}_cls').weight.grad.abs().sum() > 0
    assert getattr(head, f'{prefix}_reg').weight.grad.abs().sum() > 0
    if 'RankSort' in name:
        assert {'loss_rank_sort', 'loss_bbox'} <= set(losses)
        # loss-value-based weighting: the box term has the RS value
        assert losses['loss_bbox'].item() == pytest.approx(
            losses['loss_rank_sort'].item(), rel=1e-5)
    else:
        assert {'loss_alrp_cls', 'loss_alrp_loc'} <= set(losses)
        assert 'loss_bbox' not in losses
        assert losses['loss_alrp_loc'].item() > 0
    if 'ATSS' in name:  # the centerness branch is dropped
        assert losses['loss_centerness'].item() == 0
        grad = head.atss_centerness.weight.grad
        assert grad is not None and not grad.any()


def _captured_call(head, kwarg):
    """Run loss_by_feat and return what loss_cls got as ``kwarg``."""
    seen = {}
    forward = head.loss_cls.forward

    def spy(*args, **kwargs):
        seen.update(kwargs)
        seen['labels'] = args[1]
        return forward(*args, **kwargs)

    head.loss_cls.forward = spy
    feats, gts, metas = batch()
    head.loss_by_feat(*head(feats), gts, metas)
    return seen[kwarg], seen['labels']


@pytest.mark.parametrize('name', ['RankSortRetinaHead', 'RankSortATSSHead'])
def test_rs_labels_are_the_positives_ious(name):
    """The quality labels: in [0, 1] at the positive anchors, 0 elsewhere,
    and the same as an IoU computed here from the decoded boxes."""
    head = build(name)
    quality, labels = _captured_call(head, 'quality')
    positive = labels < NUM_CLASSES
    assert positive.any() and quality.requires_grad is False
    assert ((quality[positive] > 0) & (quality[positive] <= 1)).all()
    assert not quality[~positive].any()


def test_alrp_loc_errors_are_half_one_minus_giou():
    head = build('ALRPRetinaHead')
    loc_error, labels = _captured_call(head, 'loc_error')
    positive = labels < NUM_CLASSES
    assert loc_error.requires_grad
    assert ((loc_error[positive] >= 0) & (loc_error[positive] <= 1)).all()
    assert not loc_error[~positive].any()


@pytest.mark.parametrize('name', ['RankSortATSSHead', 'ALRPATSSHead'])
def test_atss_prediction_ignores_centerness(name):
    head = build(name).eval()
    feats, _, metas = batch()
    with torch.no_grad():
        before = head.predict_by_feat(*head(feats), batch_img_metas=metas)
        head.atss_centerness.weight.data.normal_()
        head.atss_centerness.bias.data.fill_(-3)
        after = head.predict_by_feat(*head(feats), batch_img_metas=metas)
    for a, b in zip(before, after):
        torch.testing.assert_close(a.scores, b.scores)


@pytest.mark.parametrize('overrides, match', [
    (dict(reg_decoded_bbox=False), 'reg_decoded_bbox=True'),
    (dict(loss_cls=dict(type='ALRPLoss')), 'RankSortLoss')])
def test_bad_configs_are_refused(overrides, match):
    with pytest.raises(ValueError, match=match):
        MODELS.build(head_cfg('RankSortRetinaHead', **overrides))


@pytest.mark.parametrize('reg_decoded', [False, True])
def test_rs_bbox_head_loss(reg_decoded):
    cfg = dict(
        type='RankSortBBoxHead', in_channels=8, fc_out_channels=16,
        roi_feat_size=7, num_classes=NUM_CLASSES, bbox_coder=dict(CODER),
        reg_class_agnostic=False, reg_decoded_bbox=reg_decoded,
        loss_cls=dict(type='RankSortLoss'),
        loss_bbox=dict(type='GIoULoss', loss_weight=1.0) if reg_decoded
        else dict(type='SmoothL1Loss', loss_weight=1.0))
    torch.manual_seed(0)
    head = MODELS.build(cfg)
    n = 40
    g = torch.Generator().manual_seed(1)
    xy = torch.rand(n, 2, generator=g) * 40
    rois = torch.cat([torch.zeros(n, 1), xy, xy + 10 + torch.rand(
        n, 2, generator=g) * 20], 1)
    labels = torch.full((n, ), NUM_CLASSES)
    labels[:12] = torch.randint(0, NUM_CLASSES, (12, ), generator=g)
    gt = rois[:, 1:] + torch.randn(n, 4, generator=g)
    targets = gt if reg_decoded else head.bbox_coder.encode(rois[:, 1:], gt)
    targets[12:] = 0
    weights = torch.zeros(n, 4)
    weights[:12] = 1
    cls_score = torch.randn(n, NUM_CLASSES + 1, generator=g,
                            requires_grad=True)
    bbox_pred = (torch.randn(n, 4 * NUM_CLASSES, generator=g) *
                 0.1).requires_grad_(True)
    losses = head.loss(cls_score, bbox_pred, rois, labels, torch.ones(n),
                       targets, weights)
    assert {'loss_rank_sort', 'loss_bbox', 'acc_classes'} <= set(losses)
    assert losses['loss_bbox'].item() == pytest.approx(
        losses['loss_rank_sort'].item(), rel=1e-5)
    (losses['loss_rank_sort'] + losses['loss_bbox']).backward()
    assert cls_score.grad[:, :NUM_CLASSES].abs().sum() > 0
    assert not cls_score.grad[:, NUM_CLASSES].any()  # unused background
    assert bbox_pred.grad.abs().sum() > 0
    assert isinstance(head.loss_cls, RankSortLoss)
    assert not isinstance(head.loss_cls, ALRPLoss)


def test_rs_bbox_head_needs_rank_sort_loss():
    with pytest.raises(ValueError, match='RankSortLoss'):
        MODELS.build(dict(type='RankSortBBoxHead', in_channels=8,
                          fc_out_channels=16, roi_feat_size=7,
                          num_classes=NUM_CLASSES))
