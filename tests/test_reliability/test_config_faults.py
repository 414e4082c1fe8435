"""Fault catalogue, configs: a ``loss_cls`` of the package that its head
cannot serve fails when the model is built (``MODELS.build``, and so
``Runner.from_cfg``), with the config field, its value and the fix; and
``tools/misc/check_dataset.py``'s ``check_model`` names the same misfits on a
model built without the registry."""
import os.path as osp

import pytest
import torch.nn as nn
from mmengine.config import Config
from mmengine.registry import MODELS as ROOT_MODELS
from mmengine.registry import init_default_scope
from mmengine.runner import Runner

from mmdet.models.roi_heads.bbox_heads import (DoubleConvFCBBoxHead,
                                               Shared2FCBBoxHead)
from mmdet.registry import MODELS
from mmdet_rankloss.models import HeadFitError, head_fit_faults

# as tools/train.py runs them: checkpoint loading, the head-fit check
pytestmark = pytest.mark.usefixtures('mmengine_patches')

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG = osp.join(ROOT, 'configs', 'quickstart',
                  'faster-rcnn_r18-w32_fpn_rambo_toyvoc.py')
RETINANET = osp.join(ROOT, 'configs', 'dense', 'retinanet',
                     'retinanet_r18-w32_fpn_focal_16e_digitsvoc.py')
init_default_scope('mmdet')
CODER = dict(type='DeltaXYWHBBoxCoder', target_means=[0.0] * 4,
             target_stds=[0.1, 0.1, 0.2, 0.2])
EMBEDDING_LOSSES = ['FastAPLoss', 'RaMBORecallLoss', 'BatchHardTripletLoss']


@pytest.fixture(scope='module')
def check_dataset(load_tool):
    """``tools/misc/check_dataset.py`` as a module."""
    return load_tool('tools/misc/check_dataset.py')


def quickstart_cfg(loss_cls=None):
    cfg = Config.fromfile(CONFIG)
    if loss_cls is not None:
        cfg.model.roi_head.bbox_head.loss_cls = loss_cls
    return cfg


def double_head(score_space):
    return dict(
        type='DoubleConvFCBBoxHead', num_convs=1, num_fcs=1,
        conv_out_channels=16, fc_out_channels=16, in_channels=16,
        roi_feat_size=7, num_classes=4, bbox_coder=CODER,
        loss_cls=dict(type='RaMBOAPLoss', score_space=score_space))


def unchecked(head_cfg):
    """A head instantiated by its class, not through ``MODELS.build`` (no
    build-time check), inside a container as in a detector."""
    cfg = dict(head_cfg)
    head_type = {'DoubleConvFCBBoxHead': DoubleConvFCBBoxHead,
                 'Shared2FCBBoxHead': Shared2FCBBoxHead}[cfg.pop('type')]
    model = nn.Module()
    model.bbox_head = head_type(**cfg)
    return model


@pytest.mark.parametrize('loss_cls', [
    None,
    dict(type='RaMBOAPLoss', score_space='sigmoid'),
    dict(type='RaMBOAPLoss', score_space='softmax'),
    dict(type='MixedRankLoss', rank_loss=dict(type='RaMBOAPLoss')),
    dict(type='CrossEntropyLoss', use_sigmoid=False, loss_weight=1.0),
], ids=['quickstart', 'sigmoid', 'softmax', 'mixed', 'cross-entropy'])
def test_fitting_losses_build(loss_cls, check_dataset):
    model = MODELS.build(quickstart_cfg(loss_cls).model)
    assert head_fit_faults(model) == []
    assert check_dataset.check_model(model) == []


@pytest.mark.parametrize('loss', EMBEDDING_LOSSES)
def test_embedding_loss_in_a_box_head_fails_the_build(loss):
    with pytest.raises(HeadFitError) as info:
        ROOT_MODELS.build(quickstart_cfg(dict(type=loss)).model)
    message = str(info.value)
    assert message.startswith(
        f"model.roi_head.bbox_head.loss_cls={{'type': '{loss}'}} does not "
        'fit its head Shared2FCBBoxHead: forward(')
    assert 'use a classification loss there (e.g. RaMBOAPLoss)' in message
    assert info.value.faults == [
        f'model.roi_head.bbox_head.loss_cls ({loss} in Shared2FCBBoxHead): '
        + message.split('Shared2FCBBoxHead: ', 1)[1]
    ]


def test_head_ignoring_custom_channels_fails_the_build():
    """Double-Head R-CNN builds C + 1 class outputs whatever the loss asks;
    the sigmoid score space needs C. Built inside a detector, the message
    gives the config path; a head built alone is named by its type."""
    cfg = quickstart_cfg()
    bbox_head = cfg.model.roi_head.bbox_head
    bbox_head.update(double_head('sigmoid'), num_classes=20, in_channels=64)
    bbox_head.loss_cls = double_head('sigmoid')['loss_cls']  # not merged
    with pytest.raises(HeadFitError, match=r'^model\.roi_head\.bbox_head\.'
                       r"loss_cls=\{'type': 'RaMBOAPLoss', 'score_space': "
                       r"'sigmoid'\} does not fit its head "
                       r'DoubleConvFCBBoxHead: the loss asks for 20 class '
                       r'channels \(get_cls_channels\(20\)\), but the head '
                       r'built fc_cls with 21'):
        MODELS.build(cfg.model)
    with pytest.raises(HeadFitError) as info:
        MODELS.build(double_head('sigmoid'))
    assert info.value.faults == [
        'loss_cls of DoubleConvFCBBoxHead (RaMBOAPLoss in '
        'DoubleConvFCBBoxHead): the loss asks for 4 class channels '
        '(get_cls_channels(4)), but the head built fc_cls with 5: '
        'DoubleConvFCBBoxHead ignores custom_cls_channels. Use a head that '
        'honours it (e.g. Shared2FCBBoxHead) or a loss setting that needs 5 '
        'channels'
    ]
    # 'logits' wants C + 1 columns, which this head builds: it fits
    MODELS.build(double_head('logits'))


@pytest.mark.parametrize('loss_cls', [
    dict(type='RaMBOAPLoss'),
    dict(type='MixedRankLoss', rank_loss=dict(type='RaMBOAPLoss')),
], ids=['rambo', 'mixed'])
def test_rank_loss_in_a_stock_dense_head_fails_the_build(loss_cls):
    """The stock RetinaHead calls loss_cls per FPN level: the rank loss
    would rank each level alone. RaMBORetinaHead is the fix and builds."""
    cfg = Config.fromfile(RETINANET)
    cfg.model.bbox_head.loss_cls = loss_cls
    with pytest.raises(HeadFitError, match=(
            r"^model\.bbox_head\.loss_cls=\{'type': '" + loss_cls['type'] +
            r"'.*\} does not fit its head RetinaHead: the stock RetinaHead "
            r'calls loss_cls once per FPN level.*'
            r"use type='RaMBORetinaHead'")):
        MODELS.build(cfg.model)
    cfg.model.bbox_head.type = 'RaMBORetinaHead'
    assert head_fit_faults(MODELS.build(cfg.model)) == []


def test_runner_fails_when_it_builds_the_model(tmp_path):
    """``Runner.from_cfg`` (what ``tools/train.py`` calls) stops while it
    builds the model: no data loader, hook or iteration has run."""
    cfg = quickstart_cfg(dict(type='FastAPLoss'))
    cfg.work_dir = str(tmp_path)
    cfg.train_dataloader.dataset.data_root = str(tmp_path / 'no_data')
    with pytest.raises(HeadFitError,
                       match=r'^model\.roi_head\.bbox_head\.loss_cls='):
        Runner.from_cfg(cfg)


@pytest.mark.parametrize('loss', EMBEDDING_LOSSES)
def test_check_dataset_names_embedding_loss(loss, check_dataset):
    head = dict(type='Shared2FCBBoxHead', in_channels=16, fc_out_channels=16,
                roi_feat_size=7, num_classes=4, bbox_coder=CODER,
                loss_cls=dict(type=loss))
    faults = check_dataset.check_model(unchecked(head))
    assert len(faults) == 1
    assert faults[0].startswith(
        f'bbox_head.loss_cls ({loss} in Shared2FCBBoxHead): forward(')
    assert faults == head_fit_faults(unchecked(head))


def test_check_dataset_names_head_ignoring_custom_channels(check_dataset):
    faults = check_dataset.check_model(unchecked(double_head('sigmoid')))
    assert faults == [
        'bbox_head.loss_cls (RaMBOAPLoss in DoubleConvFCBBoxHead): the loss '
        'asks for 4 class channels (get_cls_channels(4)), but the head built '
        'fc_cls with 5: DoubleConvFCBBoxHead ignores custom_cls_channels. '
        'Use a head that honours it (e.g. Shared2FCBBoxHead) or a loss '
        'setting that needs 5 channels'
    ]
    assert faults == head_fit_faults(unchecked(double_head('sigmoid')))
    assert check_dataset.check_model(unchecked(double_head('logits'))) == []


def test_rank_loss_in_a_stock_fcos_head_names_the_fcos_heads():
    """FCOSHead ranks all points in one loss_cls call, but its test scores
    are not the ranked ones: the message points to the FCOS heads."""
    cfg = Config.fromfile(osp.join(
        ROOT, 'configs', 'dense', 'fcos',
        'fcos_r18-w32_fpn_focal_16e_digitsvoc.py'))
    cfg.model.bbox_head.loss_cls = dict(type='RaMBOAPLoss')
    with pytest.raises(HeadFitError, match=(
            r"does not fit its head FCOSHead: the stock FCOSHead does not "
            r".*use type='RaMBOFCOSHead' or 'RankSortFCOSHead'")):
        MODELS.build(cfg.model)
