"""``configs/rank_sort/``: RS-Cascade R-CNN and RS-PAA. The COCO configs
are the authors' recipes (every value: ``test_authors_recipes.py``); here
their RS settings are the shared ones of ``configs/dense/_base_/rank-sort.py``,
the DigitsVOC twins change only what makes their bases a cascade or PAA, and
each twin trains: one step on tiny images, and (slow) an epoch through
MMEngine's Runner on a tiny DigitsVOC, then AP50 on val."""
import os.path as osp

import pytest
import torch
from helpers import point_at, read_config  # tests/ on sys.path

import mmdet_rankloss  # noqa: F401

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG_DIR = osp.join(ROOT, 'configs')
CASCADE = 'rank_sort/cascade-rcnn_r50_fpn_rank-sort_1x_coco.py'
CASCADE_DIGITS = ('rank_sort/'
                  'cascade-rcnn_r18-w32_fpn_rank-sort_16e_digitsvoc.py')
PAA = 'rank_sort/paa_r50_fpn_rank-sort_1x_coco.py'
PAA_DIGITS = 'rank_sort/paa_r18-w32_fpn_rank-sort_16e_digitsvoc.py'
FRCNN_DIGITS = 'digitsvoc/faster-rcnn_r18-w32_fpn_rank-sort_16e_digitsvoc.py'
ATSS_DIGITS = 'dense/atss/atss_r18-w32_fpn_focal_16e_digitsvoc.py'
RS_BASE = 'dense/_base_/rank-sort.py'
DIGITS = [CASCADE_DIGITS, PAA_DIGITS]
pytestmark = pytest.mark.usefixtures('one_torch_thread')


def load(name):
    return read_config(osp.join(CONFIG_DIR, name))


def _no_delete(value):
    """A config value without MMEngine's ``_delete_`` markers."""
    if isinstance(value, dict):
        return {k: _no_delete(v) for k, v in value.items()
                if k != '_delete_'}
    return value


def test_cascade_stages_are_the_rs_rcnn_head():
    """Every stage is RS-R-CNN's bbox head (the shared
    ``rank_sort_rcnn_head``, written out because a list is replaced, not
    merged) on MMDetection's stage with the authors' coder."""
    shared = load(RS_BASE)
    rcnn_head = _no_delete(shared.rank_sort_rcnn_head.to_dict())
    for stage in load(CASCADE).model.roi_head.bbox_head:
        stage = stage.to_dict()
        assert {k: stage[k] for k in rcnn_head} == rcnn_head
        assert stage['bbox_coder'] == shared.rank_sort_bbox_coder.to_dict()
    assert load(CASCADE).model.rpn_head.loss_cls.to_dict() == _no_delete(
        shared.rank_sort_rpn_head.loss_cls.to_dict())


def test_paa_head_is_the_shared_rs_dense_head():
    head = load(PAA).model.bbox_head.to_dict()
    shared = _no_delete(load(RS_BASE).rank_sort_dense_head.to_dict())
    assert {k: head[k] for k in shared} == shared


def test_the_cascade_twin_is_its_faster_rcnn_made_a_cascade():
    """The DigitsVOC RS Faster R-CNN with three stages: its bbox head
    (class-agnostic) and its RoI training settings at IoU 0.5 / 0.6 / 0.7,
    stage weights [1, 1, 1]; nothing else differs."""
    ours = load(CASCADE_DIGITS).to_dict()
    twin = load(FRCNN_DIGITS).to_dict()
    roi = ours['model'].pop('roi_head')
    stages = ours['model']['train_cfg'].pop('rcnn')
    twin_roi = twin['model'].pop('roi_head')
    twin_rcnn = twin['model']['train_cfg'].pop('rcnn')
    assert (ours['model'].pop('type'), twin['model'].pop('type')) == (
        'CascadeRCNN', 'FasterRCNN')
    assert (roi['type'], roi['num_stages'], roi['stage_loss_weights']) == (
        'CascadeRoIHead', 3, [1, 1, 1])
    assert roi['bbox_roi_extractor'] == twin_roi['bbox_roi_extractor']
    assert roi['bbox_head'] == [
        dict(twin_roi['bbox_head'], reg_class_agnostic=True)] * 3
    for stage, iou in zip(stages, (0.5, 0.6, 0.7)):
        assert stage == dict(twin_rcnn, assigner=dict(
            twin_rcnn['assigner'], pos_iou_thr=iou, neg_iou_thr=iou,
            min_pos_iou=iou))
    assert ours == twin


def test_the_paa_twin_is_its_atss_made_rs_paa():
    """The DigitsVOC ATSS with the RS-PAA head, PAA's assigner, no score
    threshold and RS-ATSS's DigitsVOC lr; network, anchors, data and
    schedule are the ATSS twin's."""
    ours = load(PAA_DIGITS).to_dict()
    twin = load(ATSS_DIGITS).to_dict()
    rs_atss = load(ATSS_DIGITS.replace('_focal_', '_rank-sort_'))
    for key in ('rank_sort_bbox_coder', 'rank_sort_loss',
                'rank_sort_dense_head', 'rank_sort_rcnn_head',
                'rank_sort_rcnn_sampler', 'rank_sort_rpn_head',
                'rank_sort_rpn_sampler', 'alrp_dense_head', 'alrp_hooks',
                'rank_sort_test_cfg'):
        ours.pop(key)
    head, twin_head = ours['model'].pop('bbox_head'), \
        twin['model'].pop('bbox_head')
    assert (head.pop('type'), head.pop('topk'), head.pop('score_voting')) \
        == ('RankSortPAAHead', 9, True)
    assert twin_head.pop('type') == 'ATSSHead'
    assert head == dict(
        twin_head, **_no_delete(load(RS_BASE).rank_sort_dense_head.to_dict()))
    assert (ours['model'].pop('type'), twin['model'].pop('type')) == (
        'PAA', 'ATSS')
    assert ours['model']['train_cfg'].pop('assigner') == dict(
        type='MaxIoUAssigner', pos_iou_thr=0.1, neg_iou_thr=0.1,
        min_pos_iou=0, ignore_iof_thr=-1)
    twin['model']['train_cfg'].pop('assigner')
    assert ours['model']['test_cfg'].pop('score_thr') == 0.0
    twin['model']['test_cfg'].pop('score_thr')
    assert ours['optim_wrapper']['optimizer'].pop('lr') == \
        rs_atss.optim_wrapper.optimizer.lr
    twin['optim_wrapper']['optimizer'].pop('lr')
    assert ours == twin


def build(name):
    from mmengine.registry import init_default_scope

    from mmdet.registry import MODELS
    init_default_scope('mmdet')
    cfg = load(name)
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    return model, cfg


@pytest.mark.parametrize('name', DIGITS)
def test_digitsvoc_twin_trains_one_step_and_predicts(name, detection_batch):
    from mmengine.optim import build_optim_wrapper
    model, cfg = build(name)
    model.train()
    if name == CASCADE_DIGITS:
        heads = list(model.roi_head.bbox_head)
        weights = [h.fc_cls.weight for h in heads]
        keys = [f's{i}.loss_rank_sort' for i in range(3)] + [
            'loss_rpn_cls']
    else:
        heads = [model.bbox_head]
        weights = [model.bbox_head.atss_cls.weight]
        keys = ['loss_rank_sort', 'loss_bbox']
    assert all(h.num_classes == 10 for h in heads)
    before = [w.detach().clone() for w in weights]
    log_vars = model.train_step(detection_batch(10, 64),
                                build_optim_wrapper(model, cfg.optim_wrapper))
    for key in keys + ['loss']:
        assert torch.isfinite(log_vars[key]).item(), (key, log_vars)
    for b, w in zip(before, weights):  # every stage's classifier moved
        assert not torch.equal(b, w.detach())
    model.eval()
    with torch.no_grad():
        data = model.data_preprocessor(detection_batch(10, 64), False)
        results = model.predict(data['inputs'], data['data_samples'])
    scores = results[0].pred_instances.scores
    assert scores.numel() > 0  # score_thr 0
    assert bool(((scores >= 0) & (scores <= 1)).all())


@pytest.mark.slow
@pytest.mark.parametrize('name', DIGITS)
def test_digitsvoc_twin_trains_through_the_runner(name, digits_root,
                                                  tmp_path):
    from mmengine.runner import Runner
    cfg = load(name)
    cfg.work_dir = str(tmp_path / 'work')
    point_at(cfg, digits_root)
    cfg.train_cfg.max_epochs = 1  # two iterations (4 images, batch 2)
    runner = Runner.from_cfg(cfg)
    runner.train()
    assert runner.iter == 2
    keys = set(runner.message_hub.log_scalars)
    assert {'train/loss', 'val/pascal_voc/AP50'} <= keys
