"""RS / aLRP dense heads and the RS bbox head: one loss forward/backward
through ``loss_by_feat`` / ``loss`` on tiny inputs, and what each head
changes (IoU labels, value-weighted box loss, no centerness)."""

import pytest
import torch
import torch.nn as nn
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
    forward = head.loss_cls.terms

    def spy(*args, **kwargs):
        seen.update(kwargs)
        seen['labels'] = args[1]
        return forward(*args, **kwargs)

    head.loss_cls.terms = spy
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
def test_rs_bbox_head_loss(reg_decoded, roi_head_inputs):
    cfg = dict(
        type='RankSortBBoxHead', in_channels=8, fc_out_channels=16,
        roi_feat_size=7, num_classes=NUM_CLASSES, bbox_coder=dict(CODER),
        reg_class_agnostic=False, reg_decoded_bbox=reg_decoded,
        loss_cls=dict(type='RankSortLoss'),
        loss_bbox=dict(type='GIoULoss', loss_weight=1.0) if reg_decoded
        else dict(type='SmoothL1Loss', loss_weight=1.0))
    torch.manual_seed(0)
    head = MODELS.build(cfg)
    cls_score, bbox_pred, *rest = roi_head_inputs(head, NUM_CLASSES)
    cls_score.requires_grad_(True)
    bbox_pred.requires_grad_(True)
    losses = head.loss(cls_score, bbox_pred, *rest)
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


# ------------------------------------------------------- box weighting
class _KeepsOutputs(nn.Module):
    """Wraps ``loss_bbox``: keeps each output (the per-anchor box losses,
    called with ``reduction_override='none'``) with its gradient."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.outputs = []

    def forward(self, *args, **kwargs):
        out = self.inner(*args, **kwargs)
        if out.requires_grad:
            out.retain_grad()
        self.outputs.append(out)
        return out


def _expected_box_grad(losses, per_positive, weights):
    """d loss_bbox / d L_i of ``L_RS * (sum w L / sum w) / (sum w L / sum
    w)`` with the ratio detached: ``L_RS w_i / sum_j w_j L_j``."""
    rs = losses['loss_rank_sort'].detach().double()
    per_positive = per_positive.detach().double()
    weights = weights.double()
    return rs * weights / (weights * per_positive).sum()


@pytest.mark.parametrize('mode', ['score', 'uniform'])
@pytest.mark.parametrize('name', ['RankSortRetinaHead', 'RankSortATSSHead'])
def test_dense_box_weighting_by_hand(name, mode):
    """The box term has the RS value; its gradient per positive is
    ``L_RS w_i / sum_j w_j L_j`` with ``w_i`` the positive's detached top
    class score ('score') or 1 ('uniform')."""
    head = build(name, box_weighting=mode)
    assert head.box_weighting == mode
    head.loss_bbox = _KeepsOutputs(head.loss_bbox)
    seen = {}
    forward = head.loss_cls.terms

    def spy(cls_score, labels, *args, **kwargs):
        seen.update(cls_score=cls_score.detach(), labels=labels)
        return forward(cls_score, labels, *args, **kwargs)

    head.loss_cls.terms = spy
    feats, gts, metas = batch()
    losses = head.loss_by_feat(*head(feats), gts, metas)
    assert losses['loss_bbox'].item() == pytest.approx(
        losses['loss_rank_sort'].item(), rel=1e-5)
    [per_anchor] = head.loss_bbox.outputs  # every anchor's box loss
    losses['loss_bbox'].backward()
    positive = seen['labels'] < NUM_CLASSES
    assert per_anchor.shape == positive.shape and int(positive.sum()) > 2
    assert not per_anchor.grad[~positive].any()  # masked
    per_positive = per_anchor[positive]
    per_positive.grad = per_anchor.grad[positive]
    top = seen['cls_score'][positive, :NUM_CLASSES].sigmoid().amax(1)
    weights = top if mode == 'score' else torch.ones_like(top)
    expected = _expected_box_grad(losses, per_positive, weights)
    torch.testing.assert_close(per_positive.grad.double(), expected,
                               rtol=1e-4, atol=1e-9)
    ratio = per_positive.grad / weights
    torch.testing.assert_close(ratio, ratio[:1].expand_as(ratio),
                               rtol=1e-4, atol=0)
    if mode == 'score':  # not uniform: the scores differ
        assert per_positive.grad.std() > 0


def test_box_weights_and_their_average():
    from mmdet_rankloss.models.rank_sort_heads import (box_loss_weights,
                                                       weighted_box_loss)
    logits = torch.tensor([[0., 2., -1., 9.], [-3., -4., -2., 9.]],
                          requires_grad=True)
    weights = box_loss_weights(logits, 3, 'score')
    torch.testing.assert_close(weights,
                               torch.tensor([2., -2.]).sigmoid())
    assert not weights.requires_grad  # detached; the 4th column unread
    assert box_loss_weights(logits, 3, 'uniform').tolist() == [1., 1.]
    per_positive = torch.tensor([1., 3.])
    assert weighted_box_loss(per_positive, weights).item() == pytest.approx(
        float((weights * per_positive).sum() / weights.sum()))
    # weights summing to < 1e-12: divided by 1
    tiny = torch.tensor([1e-14, 1e-14])
    assert weighted_box_loss(per_positive, tiny).item() == pytest.approx(
        4e-14)


@pytest.mark.parametrize('name', ['RankSortRetinaHead', 'RankSortATSSHead',
                                  'RankSortRPNHead', 'RankSortBBoxHead'])
def test_box_weighting_is_checked(name):
    if name == 'RankSortBBoxHead':
        cfg = dict(type=name, in_channels=8, fc_out_channels=16,
                   roi_feat_size=7, num_classes=NUM_CLASSES,
                   loss_cls=dict(type='RankSortLoss'))
    elif name == 'RankSortRPNHead':
        cfg = rpn_cfg()
    else:
        cfg = head_cfg(name)
    for good in ('score', 'uniform'):
        assert MODELS.build(dict(cfg, box_weighting=good)).box_weighting \
            == good
    assert MODELS.build(cfg).box_weighting == 'score'  # the authors'
    with pytest.raises(ValueError,
                       match=f"{name}: box_weighting must be one of "
                       r"\('score', 'uniform'\), got 'iou'"):
        MODELS.build(dict(cfg, box_weighting='iou'))


def rs_bbox_head_inputs(head, reg_decoded=True):
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
    return cls_score, bbox_pred, rois, labels, torch.ones(n), targets, \
        weights


@pytest.mark.parametrize('mode', ['score', 'uniform'])
def test_rs_bbox_head_box_weighting_by_hand(mode):
    """RS-R-CNN: the weights are the top sigmoid over the C foreground
    columns (the background column, last, is not read)."""
    head = MODELS.build(dict(
        type='RankSortBBoxHead', in_channels=8, fc_out_channels=16,
        roi_feat_size=7, num_classes=NUM_CLASSES, bbox_coder=dict(CODER),
        reg_class_agnostic=False, reg_decoded_bbox=True,
        loss_cls=dict(type='RankSortLoss'),
        loss_bbox=dict(type='GIoULoss', loss_weight=1.0),
        box_weighting=mode))
    head.loss_bbox = _KeepsOutputs(head.loss_bbox)
    inputs = rs_bbox_head_inputs(head)
    cls_score, labels = inputs[0], inputs[3]
    with torch.no_grad():  # a background logit that would win if read
        cls_score[:, NUM_CLASSES] = 20
    losses = head.loss(*inputs)
    assert losses['loss_bbox'].item() == pytest.approx(
        losses['loss_rank_sort'].item(), rel=1e-5)
    [per_roi] = head.loss_bbox.outputs  # every RoI's box loss
    losses['loss_bbox'].backward()
    positive = labels < NUM_CLASSES
    assert not per_roi.grad[~positive].any()  # masked
    per_positive = per_roi[positive]
    per_positive.grad = per_roi.grad[positive]
    top = cls_score.detach()[positive, :NUM_CLASSES].sigmoid().amax(1)
    weights = top if mode == 'score' else torch.ones_like(top)
    torch.testing.assert_close(
        per_positive.grad.double(),
        _expected_box_grad(losses, per_positive, weights), rtol=1e-4,
        atol=1e-9)


def test_rs_bbox_head_uniform_is_the_stock_box_gradient():
    """'uniform' trains the box branch as the stock box loss rescaled to
    L_RS did before (same value, same gradient)."""
    head = MODELS.build(dict(
        type='RankSortBBoxHead', in_channels=8, fc_out_channels=16,
        roi_feat_size=7, num_classes=NUM_CLASSES, bbox_coder=dict(CODER),
        reg_decoded_bbox=True, loss_cls=dict(type='RankSortLoss'),
        loss_bbox=dict(type='GIoULoss', loss_weight=1.0),
        box_weighting='uniform'))
    inputs = rs_bbox_head_inputs(head)
    bbox_pred = inputs[1]
    losses = head.loss(*inputs)
    losses['loss_bbox'].backward()
    ours = bbox_pred.grad.clone()
    bbox_pred.grad = None
    from mmdet.models.roi_heads.bbox_heads import Shared2FCBBoxHead
    from mmdet_rankloss.models.rank_sort_heads import value_weighted
    stock = Shared2FCBBoxHead.loss(head, None, *inputs[1:])['loss_bbox']
    value_weighted(stock, losses['loss_rank_sort']).backward()
    torch.testing.assert_close(ours, bbox_pred.grad, rtol=1e-4, atol=1e-8)


# ------------------------------------------------------------- RS RPN
def rpn_cfg(**overrides):
    cfg = dict(
        type='RankSortRPNHead', in_channels=8, feat_channels=8,
        anchor_generator=dict(type='AnchorGenerator', scales=[4],
                              ratios=[0.5, 1.0, 2.0], strides=STRIDES),
        bbox_coder=CODER, reg_decoded_bbox=True,
        loss_cls=dict(type='RankSortLoss', loss_weight=0.2),
        loss_bbox=dict(type='GIoULoss', loss_weight=1.0),
        train_cfg=ConfigDict(
            assigner=dict(type='MaxIoUAssigner', pos_iou_thr=0.7,
                          neg_iou_thr=0.3, min_pos_iou=0.3,
                          match_low_quality=True, ignore_iof_thr=-1),
            sampler=dict(type='PseudoSampler'), allowed_border=-1,
            pos_weight=-1, debug=False),
        test_cfg=ConfigDict(nms_pre=200, max_per_img=50, min_bbox_size=0,
                            nms=dict(type='nms', iou_threshold=0.7)))
    cfg.update(overrides)
    return cfg


def rpn_gts():
    _, gts, metas = batch()
    for gt in gts:  # the two-stage detector gives the RPN one class
        gt.labels = torch.zeros_like(gt.labels)
    return gts, metas


def build_rpn(**overrides):
    torch.manual_seed(0)
    head = MODELS.build(rpn_cfg(**overrides))
    head.init_weights()
    return head.train()


def test_rs_rpn_loss_names_weight_and_gradients():
    head = build_rpn()
    feats = batch()[0]
    gts, metas = rpn_gts()
    losses = head.loss_by_feat(*head(feats), gts, metas)
    assert set(losses) == {'loss_rpn_cls', 'loss_rpn_bbox'}
    # the diagnostics on request, under the RPN's names
    logged = build_rpn(loss_cls=dict(type='RankSortLoss', loss_weight=0.2,
                                     log_diagnostics=True))
    diagnosed = logged.loss_by_feat(*logged(feats), gts, metas)
    assert set(diagnosed) == {'loss_rpn_cls', 'loss_rpn_bbox',
                              'rpn_rs_ranking', 'rpn_rs_sorting'}
    assert diagnosed['loss_rpn_cls'].item() == pytest.approx(
        losses['loss_rpn_cls'].item(), rel=1e-6)
    assert losses['loss_rpn_cls'].item() > 0
    # the box term has the (weighted) RS value
    assert losses['loss_rpn_bbox'].item() == pytest.approx(
        losses['loss_rpn_cls'].item(), rel=1e-5)
    (losses['loss_rpn_cls'] + losses['loss_rpn_bbox']).backward()
    assert head.rpn_cls.weight.grad.abs().sum() > 0
    assert head.rpn_reg.weight.grad.abs().sum() > 0
    # loss_weight 0.2 scales the RS value (and so the box term)
    full = build_rpn(loss_cls=dict(type='RankSortLoss', loss_weight=1.0))
    unweighted = full.loss_by_feat(*full(feats), gts, metas)
    assert losses['loss_rpn_cls'].item() == pytest.approx(
        0.2 * unweighted['loss_rpn_cls'].item(), rel=1e-5)
    assert head.rpn_cls.out_channels == head.num_base_priors  # one class


def test_rs_rpn_ranks_all_anchors_with_iou_labels():
    head = build_rpn()
    seen = {}
    forward = head.loss_cls.terms

    def spy(cls_score, labels, *args, **kwargs):
        seen.update(kwargs, cls_score=cls_score, labels=labels, weight=args[0])
        return forward(cls_score, labels, *args, **kwargs)

    head.loss_cls.terms = spy
    feats = batch()[0]
    gts, metas = rpn_gts()
    head.loss_by_feat(*head(feats), gts, metas)
    anchors = sum(2 * 3 * (IMG // s)**2 for s in STRIDES)
    assert seen['cls_score'].shape == (anchors, 2)  # objectness + unused bg
    positive = seen['labels'] == 0
    # no sampling: every anchor the assigner does not ignore (IoU in [0.3,
    # 0.7) and not a ground truth's best) is ranked, positives included
    ranked = seen['weight'] > 0
    assert bool(ranked[positive].all())
    assert int(ranked.sum()) > 0.5 * anchors
    assert positive.any() and bool((seen['labels'][~positive] == 1).all())
    quality = seen['quality']
    assert ((quality[positive] > 0) & (quality[positive] <= 1)).all()
    assert not quality[~positive].any()


def test_rs_rpn_predicts_proposals():
    head = build_rpn().eval()
    feats, _, metas = batch()
    with torch.no_grad():
        results = head.predict_by_feat(*head(feats), batch_img_metas=metas,
                                       cfg=head.test_cfg, rescale=False)
    assert len(results) == 2
    for proposals in results:
        assert 0 < len(proposals) <= 50
        assert bool(((proposals.scores >= 0) &
                     (proposals.scores <= 1)).all())
        boxes = proposals.bboxes
        assert bool(torch.isfinite(boxes).all())
        assert bool((boxes[:, 2:] >= boxes[:, :2]).all())


def test_rs_rpn_needs_rank_sort_loss_and_decoded_boxes():
    with pytest.raises(ValueError, match='RankSortRPNHead needs loss_cls'):
        MODELS.build(rpn_cfg(loss_cls=dict(type='CrossEntropyLoss',
                                           use_sigmoid=True)))
    with pytest.raises(ValueError, match='reg_decoded_bbox=True'):
        MODELS.build(rpn_cfg(reg_decoded_bbox=False))


def test_rs_rcnn_trains_with_the_rs_rpn_and_proposes(detection_batch):
    """The DigitsVOC RS-R-CNN config: two training steps through the
    two-stage detector (the RPN's losses keep their names), then the RPN's
    proposals and the detector's predictions at test time."""
    import os.path as osp
    from mmengine.config import Config
    from mmengine.optim import build_optim_wrapper
    root = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
    cfg = Config.fromfile(osp.join(
        root, 'configs', 'digitsvoc',
        'faster-rcnn_r18-w32_fpn_rank-sort_16e_digitsvoc.py'))
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.train()
    assert type(model.rpn_head).__name__ == 'RankSortRPNHead'
    assert model.rpn_head.loss_cls.loss_weight == 0.2
    optim_wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    num_classes = cfg.model.roi_head.bbox_head.num_classes
    before = model.rpn_head.rpn_cls.weight.detach().clone()
    for _ in range(2):
        log_vars = model.train_step(detection_batch(num_classes),
                                    optim_wrapper)
    assert {'loss_rpn_cls', 'loss_rpn_bbox', 'loss_rank_sort',
            'loss_bbox'} <= set(log_vars)
    for key in ('loss_rpn_cls', 'loss_rpn_bbox', 'loss', 'loss_rank_sort'):
        assert torch.isfinite(log_vars[key]).item(), key
    assert not torch.equal(before, model.rpn_head.rpn_cls.weight.detach())
    model.eval()
    with torch.no_grad():
        data = model.data_preprocessor(detection_batch(num_classes), False)
        feats = model.extract_feat(data['inputs'])
        proposals = model.rpn_head.predict(feats, data['data_samples'],
                                           rescale=False)
        results = model.predict(data['inputs'], data['data_samples'])
    for props in proposals:
        assert len(props) > 0 and bool(torch.isfinite(props.bboxes).all())
    scores = results[0].pred_instances.scores
    assert scores.numel() > 0 and bool(((scores >= 0) & (scores <= 1)).all())
