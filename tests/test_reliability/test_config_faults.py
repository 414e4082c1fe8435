"""Fault catalogue, configs: a ``loss_cls`` that does not fit its head is
found by ``tools/check_dataset.py`` from the built model, before any data
is loaded, with a message that says what to change."""
import importlib.util
import os.path as osp

import pytest
import torch.nn as nn
from mmengine.config import Config
from mmengine.registry import init_default_scope

from mmdet.registry import MODELS

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG = osp.join(ROOT, 'configs', 'quickstart',
                  'faster-rcnn_r18-w32_fpn_rambo_toyvoc.py')
spec = importlib.util.spec_from_file_location(
    'check_dataset', osp.join(ROOT, 'tools', 'check_dataset.py'))
check_dataset = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_dataset)
init_default_scope('mmdet')
CODER = dict(type='DeltaXYWHBBoxCoder', target_means=[0.0] * 4,
             target_stds=[0.1, 0.1, 0.2, 0.2])


def quickstart_model(loss_cls=None):
    cfg = Config.fromfile(CONFIG)
    if loss_cls is not None:
        cfg.model.roi_head.bbox_head.loss_cls = loss_cls
    return MODELS.build(cfg.model)


def wrapped(head_cfg):
    """A head inside a container, as in a detector."""
    model = nn.Module()
    model.bbox_head = MODELS.build(head_cfg)
    return model


@pytest.mark.parametrize('loss_cls', [
    None,
    dict(type='RaMBOAPLoss', score_space='sigmoid'),
    dict(type='RaMBOAPLoss', score_space='softmax'),
    dict(type='CrossEntropyLoss', use_sigmoid=False, loss_weight=1.0),
], ids=['quickstart', 'sigmoid', 'softmax', 'cross-entropy'])
def test_fitting_losses_pass(loss_cls):
    assert check_dataset.check_model(quickstart_model(loss_cls)) == []


@pytest.mark.parametrize('loss', ['FastAPLoss', 'RaMBORecallLoss',
                                  'BatchHardTripletLoss'])
def test_embedding_loss_in_a_box_head_is_named(loss):
    faults = check_dataset.check_model(quickstart_model(dict(type=loss)))
    assert len(faults) == 1
    assert faults[0].startswith(
        f'roi_head.bbox_head.loss_cls ({loss} in Shared2FCBBoxHead): '
        'forward(')
    assert 'use a classification loss there (e.g. RaMBOAPLoss)' in faults[0]


def double_head(score_space):
    return dict(
        type='DoubleConvFCBBoxHead', num_convs=1, num_fcs=1,
        conv_out_channels=16, fc_out_channels=16, in_channels=16,
        roi_feat_size=7, num_classes=4, bbox_coder=CODER,
        loss_cls=dict(type='RaMBOAPLoss', score_space=score_space))


def test_head_ignoring_custom_channels_is_named():
    """Double-Head R-CNN builds C + 1 class outputs whatever the loss
    asks; the sigmoid score space needs C."""
    faults = check_dataset.check_model(wrapped(double_head('sigmoid')))
    assert faults == [
        'bbox_head.loss_cls (RaMBOAPLoss in DoubleConvFCBBoxHead): the loss '
        'asks for 4 class channels (get_cls_channels(4)), but the head built '
        'fc_cls with 5: DoubleConvFCBBoxHead ignores custom_cls_channels. '
        'Use a head that honours it (e.g. Shared2FCBBoxHead) or a loss '
        'setting that needs 5 channels'
    ]
    assert check_dataset.check_model(wrapped(double_head('logits'))) == []
