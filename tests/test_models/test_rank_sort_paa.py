"""RS-PAA (``RankSortPAAHead``): its loss equals Rank & Sort and the RS box
loss evaluated here on the targets of MMDetection's own ``PAAHead`` with the
authors' anchor score (focal + GIoU), its IoU branch is dropped, and it
predicts from the class scores alone."""
import pytest
import torch
from mmengine.config import ConfigDict
# the tiny RS heads' settings and batch (tests/test_models/)
from test_rank_sort_heads import NUM_CLASSES, batch, head_cfg

import mmdet_rankloss  # noqa: F401
from mmdet.models.dense_heads.paa_head import levels_to_images
from mmdet.models.layers import multiclass_nms
from mmdet.registry import MODELS
from mmdet.structures.bbox import bbox_overlaps
from mmdet_rankloss.losses import RankSortLoss

PAA_TRAIN = dict(
    assigner=dict(type='MaxIoUAssigner', pos_iou_thr=0.1, neg_iou_thr=0.1,
                  min_pos_iou=0, ignore_iof_thr=-1),
    allowed_border=-1, pos_weight=-1, debug=False)
FOCAL = dict(type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25,
             loss_weight=1.0)
pytestmark = pytest.mark.usefixtures('one_torch_thread')


def paa_cfg(name='RankSortPAAHead', **overrides):
    return head_cfg(
        name, train_cfg=ConfigDict(PAA_TRAIN),
        norm_cfg=dict(type='GN', num_groups=4, requires_grad=True),
        **overrides)


def build(**overrides):
    torch.manual_seed(0)
    head = MODELS.build(paa_cfg(**overrides))
    head.init_weights()
    return head.train()


def leaf_outputs(head, feats):
    """The head's forward with leaf class scores and box deltas."""
    cls, bbox, iou = head(feats)
    return ([c.detach().requires_grad_() for c in cls],
            [b.detach().requires_grad_() for b in bbox], iou)


def expected_losses(head, cls, bbox, gts, metas):
    """RS and the RS box loss on the targets of a stock ``PAAHead`` with
    the authors' anchor score (focal loss + GIoU, weight 1) and the same
    anchors: ``(rs, box)``, ``box`` before its value weighting."""
    stock = MODELS.build(paa_cfg('PAAHead', loss_cls=FOCAL))
    sizes = [c.shape[-2:] for c in cls]
    anchors, valid = stock.get_anchors(sizes, metas, device='cpu')
    labels, label_w, bbox_t, bbox_w, pos_inds, pos_gt = stock.get_targets(
        anchors, valid, gts, metas)
    cls_img = [c.reshape(-1, NUM_CLASSES) for c in levels_to_images(cls)]
    bbox_img = [b.reshape(-1, 4) for b in levels_to_images(bbox)]
    with torch.no_grad():
        pos_losses = [stock.get_pos_loss(*args)[0] for args in zip(
            anchors, cls_img, bbox_img, labels, label_w, bbox_t, bbox_w,
            pos_inds)]
        reassigned = [stock.paa_reassign(*args) for args in zip(
            pos_losses, labels, label_w, bbox_w, pos_inds, pos_gt, anchors)]
    labels = torch.cat([r[0] for r in reassigned])
    weights = torch.cat([r[1] for r in reassigned])
    scores = torch.cat(cls_img)
    pred = stock.bbox_coder.decode(
        torch.cat([torch.cat(a) for a in anchors]), torch.cat(bbox_img))
    target = torch.cat(bbox_t)
    fg = labels < NUM_CLASSES
    assert fg.any()
    iou = bbox_overlaps(pred[fg].detach(), target[fg], is_aligned=True)
    quality = torch.zeros(len(labels)).masked_scatter(fg, iou)
    logits = torch.cat([scores, scores.new_zeros(len(scores), 1)], 1)
    rs = RankSortLoss()(logits, labels, weights, quality=quality)
    giou = 1 - bbox_overlaps(pred[fg], target[fg], mode='giou',
                             is_aligned=True)
    w = scores[fg].detach().sigmoid().amax(1)
    return rs, (w * giou).sum() / w.sum()


def test_loss_is_rank_sort_on_paa_targets_by_hand():
    """Value and gradients of ``loss_rank_sort`` and ``loss_bbox`` against
    RS and the score-weighted GIoU, rescaled to the RS value (the authors'
    ``RankBasedPAAHead.loss``), on the stock head's PAA assignment."""
    head = build()
    feats, gts, metas = batch()
    cls, bbox, iou = leaf_outputs(head, feats)
    losses = head.loss_by_feat(cls, bbox, iou, gts, metas)
    grads = torch.autograd.grad(
        [losses['loss_rank_sort'], losses['loss_bbox']], cls + bbox)
    cls2 = [c.detach().requires_grad_() for c in cls]
    bbox2 = [b.detach().requires_grad_() for b in bbox]
    rs, box = expected_losses(head, cls2, bbox2, gts, metas)
    expected_box = box * (rs.detach() / box.detach())
    want = torch.autograd.grad([rs, expected_box], cls2 + bbox2)
    torch.testing.assert_close(losses['loss_rank_sort'], rs)
    torch.testing.assert_close(losses['loss_bbox'], rs.detach())
    for got, expected in zip(grads, want):
        torch.testing.assert_close(got, expected)


def test_anchor_score_is_focal_plus_giou():
    """The GMM's input: the authors' focal loss + GIoU of each candidate,
    whatever the head trains with."""
    head = build()
    focal = head.assign_cls_loss
    assert (type(focal).__name__, focal.gamma, focal.alpha,
            focal.loss_weight, focal.use_sigmoid) == (
                'FocalLoss', 2.0, 0.25, 1.0, True)
    stock = MODELS.build(paa_cfg('PAAHead', loss_cls=FOCAL))
    feats, gts, metas = batch()
    cls, bbox, _ = head(feats)
    sizes = [c.shape[-2:] for c in cls]
    anchors, valid = stock.get_anchors(sizes, metas, device='cpu')
    targets = stock.get_targets(anchors, valid, gts, metas)
    args = (anchors[0], levels_to_images(cls)[0].reshape(-1, NUM_CLASSES),
            levels_to_images(bbox)[0].reshape(-1, 4)) + tuple(
                t[0] for t in targets[:5])
    torch.testing.assert_close(head.get_pos_loss(*args)[0],
                               stock.get_pos_loss(*args)[0])


def test_iou_branch_is_dropped():
    head = build()
    feats, gts, metas = batch()
    losses = head.loss_by_feat(*head(feats), gts, metas)
    assert set(losses) == {'loss_rank_sort', 'loss_bbox', 'loss_iou'}
    assert losses['loss_iou'].item() == 0
    sum(losses.values()).backward()
    assert head.atss_cls.weight.grad.abs().sum() > 0
    grad = head.atss_centerness.weight.grad
    assert grad is not None and not grad.any()


@pytest.mark.parametrize('voting', [False, True])
def test_prediction_is_on_the_class_scores(voting):
    """Without voting: the top-k anchors by score and MMDetection's
    ``multiclass_nms`` on the plain sigmoid scores, as the authors'
    ``_get_bboxes_single``; voting moves boxes, never scores. The IoU
    branch changes nothing."""
    head = build(score_voting=voting).eval()
    feats, _, metas = batch()
    cfg = head.test_cfg
    with torch.no_grad():
        cls, bbox, iou = head(feats)
        got = head.predict_by_feat(cls, bbox, iou, batch_img_metas=metas)
        other = head.predict_by_feat(cls, bbox, [i * 0 - 5 for i in iou],
                                     batch_img_metas=metas)
        priors = head.prior_generator.grid_priors(
            [c.shape[-2:] for c in cls], device='cpu')
        boxes, scores = [], []
        for c, b, p in zip(cls, bbox, priors):
            s = c[0].permute(1, 2, 0).reshape(-1, NUM_CLASSES).sigmoid()
            d = b[0].permute(1, 2, 0).reshape(-1, 4)
            keep = s.amax(1).topk(min(cfg.nms_pre, len(s))).indices
            boxes.append(head.bbox_coder.decode(p[keep], d[keep],
                                                max_shape=(64, 64)))
            scores.append(s[keep])
        scores = torch.cat(scores)
        dets, labels = multiclass_nms(
            torch.cat(boxes), torch.cat([scores, scores.new_zeros(
                len(scores), 1)], 1), cfg.score_thr, cfg.nms,
            cfg.max_per_img)
    torch.testing.assert_close(got[0].scores, other[0].scores)
    if voting:  # voting lists the detections class by class
        key = got[0].labels + got[0].scores / 2
        torch.testing.assert_close(key.sort().values,
                                   (labels + dets[:, -1] / 2).sort().values)
    else:
        torch.testing.assert_close(got[0].scores, dets[:, -1])
        torch.testing.assert_close(got[0].labels, labels)
        torch.testing.assert_close(got[0].bboxes, dets[:, :4])


@pytest.mark.parametrize('overrides, match', [
    (dict(loss_cls=FOCAL), 'RankSortLoss'),
    (dict(box_weighting='max'), 'box_weighting')])
def test_bad_configs_are_refused(overrides, match):
    with pytest.raises(ValueError, match=match):
        MODELS.build(paa_cfg(**overrides))
