"""The Rank & Sort and aLRP configs follow the authors' code
(``configs/dense/_base_/rank-sort.py``): every RS / aLRP dense head decodes
with target_stds [0.1, 0.1, 0.2, 0.2], the aLRP configs carry the
self-balance hook (the authors' recipes with their period, one epoch:
tests/test_configs/test_authors_recipes.py; the others on the iteration
default), and every RS-R-CNN config trains its RPN with Rank & Sort."""
import glob
import os.path as osp

import pytest
import torch
from mmengine.config import Config

import mmdet_rankloss  # noqa: F401

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG_DIR = osp.join(ROOT, 'configs')
DENSE = sorted(
    osp.relpath(p, CONFIG_DIR)
    for p in glob.glob(osp.join(CONFIG_DIR, 'dense', '*', '*.py'))
    if ('_rank-sort_' in p or '_alrp_' in p) and '/fcos/' not in p)
# (FCOS decodes points, not anchors: tests/test_models/test_fcos_heads.py)
RS_RCNN = sorted(
    osp.relpath(p, CONFIG_DIR)
    for p in glob.glob(osp.join(CONFIG_DIR, '*', '*.py'))
    if 'RankSortBBoxHead' in open(p, encoding='utf-8').read()
    or 'rank_sort_rcnn_head' in open(p, encoding='utf-8').read())
AUTHORS_CODER = dict(type='DeltaXYWHBBoxCoder', target_means=[0.] * 4,
                     target_stds=[0.1, 0.1, 0.2, 0.2])


def load(name):
    return Config.fromfile(osp.join(CONFIG_DIR, name))


def test_the_configs_are_found():
    # RetinaNet and ATSS, RS and aLRP, DigitsVOC (16 epochs; RetinaNet RS
    # also 56) / VOC07+12 / COCO on MMDetection's recipe (mmdet-1x), and the
    # authors' COCO recipes
    assert len(DENSE) == 16
    assert {'digitsvoc/faster-rcnn_r18-w32_fpn_rank-sort_16e_digitsvoc.py',
            'rambo/faster-rcnn_r50_fpn_rank-sort_1x_coco.py',
            'rambo/faster-rcnn_r50_fpn_rank-sort_1x_voc0712.py'} <= set(
                RS_RCNN)


@pytest.mark.parametrize('name', DENSE)
def test_dense_heads_decode_with_the_authors_stds(name):
    head = load(name).model.bbox_head
    assert head.type.startswith(('RankSort', 'ALRP'))
    assert head.bbox_coder.to_dict() == AUTHORS_CODER
    assert head.reg_decoded_bbox is True
    assert 'box_weighting' not in head  # the head's default: 'score'


@pytest.mark.parametrize('name', [
    n for n in DENSE if n.startswith('dense/atss') and '_100e_' not in n])
def test_atss_coder_is_unchanged(name):
    """ATSS already had the authors' stds: the shared coder changes
    nothing there. (The aLRP authors' "ATSS" is a RetinaNet head.)"""
    twin = load(name.replace('_rank-sort_', '_focal_').replace(
        '_alrp_', '_focal_').replace('_mmdet-1x_', '_1x_'))
    assert load(name).model.bbox_head.bbox_coder == \
        twin.model.bbox_head.bbox_coder


@pytest.mark.parametrize(
    'name', [n for n in DENSE if '_alrp_' in n and '_100e_' not in n])
def test_alrp_configs_use_the_iteration_schedule(name):
    cfg = load(name)
    assert cfg.custom_hooks == [dict(type='ALRPSelfBalanceHook')]
    assert cfg.model.bbox_head.loss_cls.sb_weight == 50.0


def test_digitsvoc_alrp_schedule():
    """DigitsVOC: 16 epochs x 48 iterations, warm-up 100 iterations:
    statistics from iteration 100, an update every 83 (8 updates)."""
    from mmengine.registry import PARAM_SCHEDULERS
    from mmdet_rankloss.losses.alrp_loss import (default_sb_period,
                                                 warmup_end)
    cfg = load('dense/retinanet/retinanet_r18-w32_fpn_alrp_16e_digitsvoc.py')
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))],
                                lr=0.01)
    epoch_length = 48  # 384 train images, batch 8
    schedulers = []
    for scheduler in cfg.param_scheduler:
        scheduler = dict(scheduler, optimizer=optimizer)
        if scheduler.get('by_epoch', True) and scheduler.pop(
                'convert_to_iter_based', False):
            scheduler['epoch_length'] = epoch_length
            cls = PARAM_SCHEDULERS.get(scheduler.pop('type'))
            schedulers.append(cls.build_iter_from_epoch(**scheduler))
        else:
            schedulers.append(PARAM_SCHEDULERS.build(scheduler))
    max_iters = cfg.train_cfg.max_epochs * epoch_length
    begin = warmup_end(schedulers, max_iters, epoch_length)
    assert (max_iters, begin) == (768, 100)
    assert default_sb_period(max_iters, begin) == 83


@pytest.mark.parametrize('name', RS_RCNN)
def test_rs_rcnn_trains_its_rpn_with_rank_sort(name):
    cfg = load(name)
    rpn = cfg.model.rpn_head
    assert rpn.type == 'RankSortRPNHead'
    assert rpn.loss_cls.to_dict() == dict(type='RankSortLoss', delta=0.5,
                                         loss_weight=0.2)
    assert rpn.loss_bbox.to_dict() == dict(type='GIoULoss', loss_weight=1.0)
    assert rpn.reg_decoded_bbox is True
    assert rpn.bbox_coder.to_dict() == AUTHORS_CODER
    # no anchor sampling: every anchor the assigner does not ignore
    assert cfg.model.train_cfg.rpn.sampler.to_dict() == dict(
        type='PseudoSampler')
    heads = cfg.model.roi_head.bbox_head  # a list in a cascade
    for head in heads if isinstance(heads, list) else [heads]:
        assert head.type == 'RankSortBBoxHead'
    # the header says how to get the stock RPN back
    with open(osp.join(CONFIG_DIR, name), encoding='utf-8') as f:
        header = f.read().split('_base_ =', 1)[0]
    assert 'stock RPN' in header.replace('\n#', '') or \
        'Stock RPN' in header.replace('\n#', '')
