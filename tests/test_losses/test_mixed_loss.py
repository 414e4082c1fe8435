"""Tests of MixedRankLoss: rank loss + auxiliary loss, hooks of the rank loss."""
import pytest
import torch
import torch.nn.functional as F

from mmdet.registry import MODELS
from mmdet_rankloss.losses import MixedRankLoss, RaMBOAPLoss


SPACES = ['sigmoid', 'softmax', 'logits']


def build(space, **kwargs):
    return MODELS.build(
        dict(
            type='MixedRankLoss',
            rank_loss=dict(type='RaMBOAPLoss', score_space=space),
            **dict(log_diagnostics=True, **kwargs)))


@pytest.mark.parametrize('space', SPACES)
def test_value_is_rank_loss_plus_independent_bce(space, rpn_batch):
    cls_score, labels = rpn_batch(space=space, seed=3)
    loss = build(space)
    loss.train()
    out = loss(cls_score, labels, avg_factor=len(labels))
    rank = RaMBOAPLoss(log_diagnostics=True, score_space=space)
    rank.train()
    expected = rank(cls_score, labels)
    for key, value in expected.items():
        torch.testing.assert_close(out[key], value)
    # Brute force: background RoIs are negatives of every class; the
    # background column of 'softmax' / 'logits' is not trained.
    num_classes = 5
    onehot = F.one_hot(labels, num_classes + 1)[:, :num_classes].float()
    bce = F.binary_cross_entropy_with_logits(
        cls_score[:, :num_classes], onehot, reduction='sum') / len(labels)
    torch.testing.assert_close(out['loss_cls_aux'], bce)
    total = sum(v for k, v in out.items() if k.startswith('loss'))
    total.backward()
    grad = cls_score.grad[:, :num_classes]
    # the auxiliary loss reaches every foreground score, the rank loss few
    assert bool((grad != 0).all())
    if space != 'sigmoid':
        assert bool((cls_score.grad[:, num_classes] == 0).all()) or \
            space == 'softmax'


def test_aux_on_all_columns_is_softmax_ce(rpn_batch):
    cls_score, labels = rpn_batch(space='softmax', seed=1)
    loss = build(
        'softmax',
        aux_loss=dict(type='CrossEntropyLoss', loss_weight=0.5),
        aux_columns='all',
        aux_name='loss_ce')
    out = loss(cls_score, labels, avg_factor=len(labels))
    torch.testing.assert_close(out['loss_ce'],
                               0.5 * F.cross_entropy(cls_score, labels))


@pytest.mark.parametrize('space', SPACES)
def test_hooks_are_the_rank_loss(space, rpn_batch):
    loss = build(space)
    rank = RaMBOAPLoss(score_space=space)
    assert loss.get_cls_channels(7) == rank.get_cls_channels(7)
    cls_score, labels = rpn_batch(space=space, seed=2)
    torch.testing.assert_close(
        loss.get_activation(cls_score), rank.get_activation(cls_score))
    assert loss.get_accuracy(cls_score, labels) == rank.get_accuracy(
        cls_score, labels)
    assert loss.custom_cls_channels and loss.custom_activation \
        and loss.custom_accuracy


def test_weight_zero_rois_are_left_out_of_both(rpn_batch):
    cls_score, labels = rpn_batch(seed=4)
    weight = torch.ones(len(labels))
    weight[::2] = 0
    out = build('logits')(cls_score, labels, weight, avg_factor=1.0)
    keep = weight > 0
    ref = build('logits')(cls_score[keep], labels[keep], avg_factor=1.0)
    torch.testing.assert_close(out['loss_cls_aux'], ref['loss_cls_aux'])
    torch.testing.assert_close(out['loss_rambo_map'], ref['loss_rambo_map'])


@pytest.mark.parametrize('kwargs, match', [
    (dict(aux_columns='background'), 'aux_columns'),
    (dict(aux_name='cls_aux'), "starting with 'loss'"),
    (dict(aux_name='loss_rambo_map'), 'rank loss output'),
])
def test_bad_arguments_name_the_problem(kwargs, match, rpn_batch):
    cls_score, labels = rpn_batch()
    with pytest.raises(ValueError, match=match):
        build('logits', **kwargs)(cls_score, labels)


def test_rank_loss_without_hooks_is_refused():
    with pytest.raises(ValueError, match='get_cls_channels'):
        MixedRankLoss(rank_loss=dict(type='CrossEntropyLoss'))
