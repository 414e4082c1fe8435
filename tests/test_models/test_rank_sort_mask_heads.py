"""RS-Mask R-CNN's mask loss (``RankSortMaskHead`` under
``RankSortRoIHead``) against hand computations of the authors' weighting:
``1 - Dice`` per positive RoI, averaged with the RS box weights, rescaled
to the RS value."""
import copy
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import mmdet_rankloss  # noqa: F401
from mmdet_rankloss.models.rank_sort_mask_heads import (
    RS_MASK_LOSS, RankSortMaskHead, RankSortRoIHead, keep_positives,
    rank_sort_mask_loss)

pytestmark = pytest.mark.usefixtures('one_torch_thread')


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def authors_dice_loss(logits, target):
    """Per RoI ``1 - 2 sum(pt) / (sum p^2 + sum t^2 + 1e-5)`` and its
    derivative with respect to the logits, by hand (numpy, float64)."""
    p = np_sigmoid(logits).reshape(len(logits), -1)
    t = target.reshape(len(target), -1)
    a = (p * t).sum(1, keepdims=True)
    b = (p * p).sum(1, keepdims=True) + (t * t).sum(1, keepdims=True) + 1e-5
    loss = 1 - 2 * a / b
    dloss_dp = -2 * t / b + 4 * a * p / b**2
    grad = (dloss_dp * p * (1 - p)).reshape(logits.shape)
    return loss[:, 0], grad


def mask_head(num_classes=3, **kwargs):
    from mmengine.registry import init_default_scope
    from mmdet.registry import MODELS
    init_default_scope('mmdet')
    return MODELS.build(dict(type='RankSortMaskHead', num_convs=1,
                             in_channels=4, conv_out_channels=4,
                             num_classes=num_classes, **kwargs))


def head_loss(head, mask_preds, targets, labels, **kwargs):
    """``loss_and_target`` on given targets (no proposals to crop)."""
    head.get_targets = lambda *args, **kw: targets
    results = [SimpleNamespace(pos_gt_labels=labels)]
    return head.loss_and_target(mask_preds, results, None, None, **kwargs)


def test_one_roi_by_hand():
    """p = (0.5, 0.5, 0.75, 0.25), t = (1, 0, 1, 0): sum(pt) = 1.25,
    sum p^2 = 1.125, sum t^2 = 2, loss = 1 - 2.5 / 3.12501."""
    logits = torch.tensor([[[0., 0.], [math.log(3), -math.log(3)]]],
                          dtype=torch.float64)
    target = torch.tensor([[[1., 0.], [1., 0.]]], dtype=torch.float64)
    out = head_loss(mask_head(1), logits[:, None], target,
                    torch.tensor([0]))
    # (MMDetection's DiceLoss casts the target to float32: sum t^2 + eps is
    # rounded to float32, hence the tolerances of these tests)
    assert out['loss_mask']['loss_mask'].item() == pytest.approx(
        1 - 2.5 / 3.12501, rel=1e-7)


def test_weighted_and_rescaled_by_hand():
    """Three positive RoIs of classes 2, 0, 2: each one's Dice loss on its
    class's channel, averaged with the weights ``max_c sigmoid(s_c)`` and
    rescaled to the RS value; value and gradient against numpy."""
    gen = torch.Generator().manual_seed(0)
    preds = torch.randn(3, 3, 5, 5, generator=gen, dtype=torch.float64)
    preds.requires_grad_(True)
    targets = (torch.rand(3, 5, 5, generator=gen) > 0.5).double()
    labels = torch.tensor([2, 0, 2])
    cls_scores = np.array([[0.3, -1.0, 2.0], [-2.0, -0.5, -3.0],
                           [0.0, 1.0, -1.0]])
    weights = np_sigmoid(cls_scores).max(1)
    rs_value = 0.7
    out = head_loss(mask_head(3), preds, targets, labels,
                    roi_weights=torch.tensor(weights),
                    target_value=torch.tensor(rs_value, dtype=torch.float64))
    loss = out['loss_mask']['loss_mask']
    chosen = preds.detach().numpy()[np.arange(3), labels.numpy()]
    per_roi, grad_per_roi = authors_dice_loss(chosen, targets.numpy())
    average = (weights * per_roi).sum() / weights.sum()
    assert loss.item() == pytest.approx(rs_value, rel=1e-12)
    loss.backward()
    expected = np.zeros(preds.shape)
    expected[np.arange(3), labels.numpy()] = (
        rs_value / average * weights[:, None, None] / weights.sum() *
        grad_per_roi)
    np.testing.assert_allclose(preds.grad.numpy(), expected, rtol=1e-6,
                               atol=1e-12)


def test_without_weights_or_value_the_plain_mean():
    gen = torch.Generator().manual_seed(1)
    preds = torch.randn(4, 1, 3, 3, generator=gen, dtype=torch.float64)
    targets = (torch.rand(4, 3, 3, generator=gen) > 0.3).double()
    out = head_loss(mask_head(2, class_agnostic=True), preds, targets,
                    torch.tensor([1, 0, 1, 1]))
    per_roi, _ = authors_dice_loss(preds[:, 0].numpy(), targets.numpy())
    assert out['loss_mask']['loss_mask'].item() == pytest.approx(
        per_roi.mean(), rel=1e-7)


def test_rank_sort_mask_loss_edges():
    empty = torch.zeros(0, requires_grad=True)
    zero = rank_sort_mask_loss(empty, torch.zeros(0), torch.tensor(0.5))
    assert zero.item() == 0 and zero.requires_grad
    # weights summing to less than 1e-12: divided by 1, as the authors
    per_roi = torch.tensor([0.4, 0.6])
    tiny = torch.tensor([1e-14, 0.])
    assert rank_sort_mask_loss(per_roi, tiny).item() == pytest.approx(
        0.4e-14)
    # a zero average is not rescaled (no division by zero)
    assert rank_sort_mask_loss(torch.zeros(2), None,
                               torch.tensor(0.3)).item() == 0


def test_keep_positives_draws_at_most_cap_and_keeps_weights_with_rois():
    def result(first, count):
        rows = torch.arange(first, first + count)
        return SimpleNamespace(
            pos_priors=rows[:, None].float().repeat(1, 4), pos_inds=rows,
            pos_is_gt=torch.zeros(count), pos_assigned_gt_inds=rows,
            pos_gt_labels=rows, pos_gt_bboxes=rows[:, None].float())

    results = [result(0, 5), result(5, 0), result(5, 7)]
    weights = torch.arange(12).double() / 10
    same, same_weights = keep_positives(results, weights, 12)
    assert same == results and same_weights is weights
    torch.manual_seed(0)
    kept, kept_weights = keep_positives(results, weights, 4)
    ids = torch.cat([r.pos_gt_labels for r in kept])
    assert len(ids) == 4 and len(set(ids.tolist())) == 4
    # each weight still belongs to its RoI, in image order
    assert torch.equal(kept_weights, ids.double() / 10)
    for res in kept:
        assert torch.equal(res.pos_priors[:, 0].long(), res.pos_inds)
    assert len(results[0].pos_inds) == 5  # the inputs are unchanged
    torch.manual_seed(1)
    other = torch.cat([r.pos_gt_labels
                       for r in keep_positives(results, weights, 4)[0]])
    assert not torch.equal(ids, other)  # a random draw


@pytest.mark.parametrize('kwargs, match', [
    (dict(loss_mask=dict(type='CrossEntropyLoss', use_mask=True)),
     'use_mask'),
])
def test_mask_head_refuses_a_loss_that_needs_labels(kwargs, match):
    with pytest.raises(ValueError, match=match):
        mask_head(3, **kwargs)


def _detector(roi_head_type='RankSortRoIHead', bbox_head='RankSortBBoxHead',
              **roi_kwargs):
    """A tiny Mask R-CNN (ResNet-18, 32-channel FPN, 3 classes) with the
    RS box and mask heads."""
    from mmengine.config import Config
    from mmengine.registry import init_default_scope
    from mmdet.registry import MODELS
    init_default_scope('mmdet')
    cfg = Config.fromfile(osp_mmdet_config('mask_rcnn',
                                           'mask-rcnn_r50_fpn_1x_coco.py'))
    model = cfg.model
    model.backbone.update(depth=18, init_cfg=None)
    model.neck.update(in_channels=[64, 128, 256, 512], out_channels=32)
    model.rpn_head.update(in_channels=32, feat_channels=32)
    roi = model.roi_head
    roi.update(type=roi_head_type, **roi_kwargs)
    roi.bbox_roi_extractor.out_channels = 32
    roi.mask_roi_extractor.out_channels = 32
    bbox = dict(type=bbox_head, in_channels=32, fc_out_channels=64,
                num_classes=3, reg_decoded_bbox=True,
                bbox_coder=roi.bbox_head.bbox_coder,
                loss_bbox=dict(type='GIoULoss'),
                loss_cls=dict(type='RankSortLoss'))
    if bbox_head != 'RankSortBBoxHead':
        bbox['loss_cls'] = dict(type='CrossEntropyLoss')
    roi.bbox_head = bbox
    roi.mask_head = dict(type='RankSortMaskHead', num_convs=1,
                         in_channels=32, conv_out_channels=32, num_classes=3,
                         loss_mask=RS_MASK_LOSS)
    model.train_cfg.rcnn.sampler = dict(type='RandomSampler', num=100000,
                                        pos_fraction=1.0, neg_pos_ub=-1,
                                        add_gt_as_proposals=True)
    return MODELS.build(model)


def osp_mmdet_config(*parts):
    import os.path as osp

    import mmdet
    return osp.join(osp.dirname(mmdet.__file__), '.mim', 'configs', *parts)


def _masked_batch(detection_batch):
    from mmdet.structures.mask import BitmapMasks
    batch = detection_batch(3, 64)
    for sample in batch['data_samples']:
        masks = np.zeros((2, 64, 64), np.uint8)
        masks[0, 8:28, 6:38] = 1
        masks[1, 26:60, 22:58] = 1
        sample.gt_instances.masks = BitmapMasks(masks, 64, 64)
    return batch


@pytest.mark.parametrize('cap', [None, 5])
def test_roi_head_hands_the_box_weights_and_rs_value(cap, detection_batch,
                                                     monkeypatch):
    """In a detector's step the mask head gets, for each positive RoI, the
    weight of the RS box loss (its detached top foreground score) and the
    RS value, so ``loss_mask`` equals ``loss_rank_sort``."""
    torch.manual_seed(0)
    model = _detector(max_mask_rois=cap)
    seen = {}
    bbox_forward = model.roi_head._bbox_forward
    mask_call = RankSortMaskHead.loss_and_target

    def record_scores(*args, **kwargs):
        out = bbox_forward(*args, **kwargs)
        seen['scores'] = out['cls_score'].detach()
        return out

    def record_mask(head, mask_preds, sampling_results, *args, **kwargs):
        seen['results'] = sampling_results
        seen['weights'] = kwargs['roi_weights']
        return mask_call(head, mask_preds, sampling_results, *args, **kwargs)

    monkeypatch.setattr(model.roi_head, '_bbox_forward', record_scores)
    monkeypatch.setattr(RankSortMaskHead, 'loss_and_target', record_mask)
    data = model.data_preprocessor(_masked_batch(detection_batch), True)
    losses = model(**data, mode='loss')
    assert losses['loss_mask'].item() == pytest.approx(
        losses['loss_rank_sort'].item(), rel=1e-6)
    losses['loss_mask'].backward()
    assert model.roi_head.mask_head.conv_logits.weight.grad.abs().sum() > 0
    # the weights, by hand: each image's RoIs are its positives, then its
    # negatives (SamplingResult.priors)
    scores = torch.sigmoid(seen['scores'][:, :3]).max(1).values
    rows, offset = [], 0
    for res in seen['results']:
        rows.append(offset + torch.arange(len(res.pos_inds)))
        offset += len(res.pos_inds) + len(res.neg_inds)
    if cap is None:
        np.testing.assert_allclose(seen['weights'].numpy(),
                                   scores[torch.cat(rows)].numpy(),
                                   rtol=1e-6)
    else:
        assert len(seen['weights']) == cap


def test_roi_head_refuses_other_heads():
    with pytest.raises(ValueError, match='RankSortBBoxHead'):
        _detector(bbox_head='Shared2FCBBoxHead')
    with pytest.raises(ValueError, match='max_mask_rois'):
        _detector(max_mask_rois=0)


def test_roi_head_is_registered():
    from mmdet.registry import MODELS
    assert MODELS.get('RankSortRoIHead') is RankSortRoIHead
    assert MODELS.get('RankSortMaskHead') is RankSortMaskHead
    assert copy.copy(RS_MASK_LOSS)['naive_dice'] is False
