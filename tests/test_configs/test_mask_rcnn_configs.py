"""The Mask R-CNN configs (``configs/mask_rcnn``): each builds its model,
the DigitsVOC ones their data and ``CocoMetric``; RS-Mask R-CNN has the
authors' settings; the twins differ only in what their names say."""
import copy
import os.path as osp

import pytest
from mmengine.config import Config

import mmdet_rankloss  # noqa: F401

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG_DIR = osp.join(ROOT, 'configs', 'mask_rcnn')
DIGITSVOC = {loss: f'mask-rcnn_r18-w32_fpn_{loss}_16e_digitsvoc.py'
             for loss in ('ce', 'rambo-bce', 'rank-sort')}
COCO = {loss: f'mask-rcnn_r50_fpn_{loss}_1x_coco.py'
        for loss in ('rambo-bce', 'rank-sort')}
ALL = sorted(DIGITSVOC.values()) + sorted(COCO.values())

pytestmark = pytest.mark.usefixtures('one_torch_thread')


def load(name):
    return Config.fromfile(osp.join(CONFIG_DIR, name))


def model_of(name):
    return load(name).model.to_dict()


def test_every_config_is_tested():
    import glob
    found = {osp.basename(p)
             for p in glob.glob(osp.join(CONFIG_DIR, '*.py'))}
    assert found == set(ALL)


@pytest.mark.parametrize('name', ALL)
def test_model_builds(name):
    from mmengine.registry import init_default_scope
    from mmdet.registry import MODELS
    cfg = load(name)
    cfg.model.backbone.init_cfg = None  # no download
    init_default_scope('mmdet')
    model = MODELS.build(cfg.model)
    assert type(model).__name__ == 'MaskRCNN'
    rank_sort = '_rank-sort_' in name
    assert type(model.roi_head).__name__ == (
        'RankSortRoIHead' if rank_sort else 'StandardRoIHead')
    assert type(model.roi_head.mask_head).__name__ == (
        'RankSortMaskHead' if rank_sort else 'FCNMaskHead')
    assert type(model.roi_head.bbox_head.loss_cls).__name__ == \
        cfg.model.roi_head.bbox_head.loss_cls.type


@pytest.mark.parametrize('name', sorted(DIGITSVOC.values()))
def test_digitsvoc_data_and_metric_build(name, digits_masks_root):
    """The COCO twin of DigitsVOC through the config's pipelines (train:
    boxes with their masks); CocoMetric scores boxes and masks."""
    from mmengine.registry import init_default_scope
    from mmdet.registry import DATASETS, METRICS
    cfg = load(name)
    init_default_scope('mmdet')
    for split in ('train', 'val', 'test'):
        dataset = cfg[f'{split}_dataloader'].dataset
        dataset.data_root = digits_masks_root
        built = DATASETS.build(dataset)
        assert built.metainfo['classes'][0] == 'zero'
        gt = built[0]['data_samples'].gt_instances
        assert len(gt) > 0
        if split == 'train':  # val and test: CocoMetric reads the file
            assert gt.masks.masks.shape[0] == len(gt)
            assert gt.masks.masks.any(axis=(1, 2)).all()
    assert len(built) == 2
    evaluator = cfg.test_evaluator
    assert evaluator.type == 'CocoMetric'
    assert evaluator.ann_file.endswith('annotations/instances_test.json')
    assert list(METRICS.build(dict(
        evaluator, ann_file=osp.join(digits_masks_root, 'annotations',
                                     'instances_test.json'))).metrics) == [
                                         'bbox', 'segm']


def _without(model, *paths):
    """A copy of the model dict without the dotted ``paths`` (where they
    are)."""
    model = copy.deepcopy(model)
    for path in paths:
        node, keys = model, path.split('.')
        for key in keys[:-1]:
            node = node[key]
        node.pop(keys[-1], None)
    return model


def test_digitsvoc_mix_is_the_ce_config_with_its_loss():
    ce, mix = (load(DIGITSVOC[k]) for k in ('ce', 'rambo-bce'))
    assert mix.model.roi_head.bbox_head.loss_cls.type == 'MixedRankLoss'
    assert _without(ce.model.to_dict(), 'roi_head.bbox_head.loss_cls') == \
        _without(mix.model.to_dict(), 'roi_head.bbox_head.loss_cls')
    assert mix.optim_wrapper.optimizer.lr == ce.optim_wrapper.optimizer.lr
    assert dict(type='RankLossMemoryHook') in mix.custom_hooks


def test_digitsvoc_rank_sort_keeps_the_ce_model_but_its_heads():
    ce, rs = (model_of(DIGITSVOC[k]) for k in ('ce', 'rank-sort'))
    changed = ('rpn_head', 'roi_head.type', 'roi_head.bbox_head',
               'roi_head.mask_head', 'roi_head.max_mask_rois',
               'train_cfg.rpn.sampler', 'train_cfg.rcnn.sampler',
               'test_cfg.rcnn.score_thr')
    assert _without(ce, *changed) == _without(rs, *changed)
    assert 'max_mask_rois' not in ce['roi_head']
    # the mask branch is the CE twin's but for its loss
    assert _without(ce['roi_head']['mask_head'], 'type', 'loss_mask') == \
        _without(rs['roi_head']['mask_head'], 'type', 'loss_mask')


def test_digitsvoc_configs_match_their_faster_rcnn_twins():
    """Backbone, neck, RPN and box head (and their lr) are those of the
    DigitsVOC Faster R-CNN configs of the same loss."""
    for loss, name in DIGITSVOC.items():
        twin = Config.fromfile(osp.join(
            ROOT, 'configs', 'digitsvoc',
            f'faster-rcnn_r18-w32_fpn_{loss}_16e_digitsvoc.py'))
        cfg = load(name)
        for key in ('backbone', 'neck', 'rpn_head'):
            assert cfg.model[key] == twin.model[key], (loss, key)
        assert cfg.model.roi_head.bbox_head == twin.model.roi_head.bbox_head
        assert cfg.optim_wrapper == twin.optim_wrapper
        assert cfg.param_scheduler == twin.param_scheduler


def test_rs_mask_rcnn_has_the_authors_settings():
    """kemaloksuz/RankSortLoss ``ranksort_mask_rcnn_r50_fpn_1x_coco.py``."""
    cfg = load(COCO['rank-sort'])
    model = cfg.model
    stds = [0.1, 0.1, 0.2, 0.2]
    rpn = model.rpn_head
    assert rpn.type == 'RankSortRPNHead' and rpn.loss_cls.loss_weight == 0.2
    assert rpn.loss_bbox.type == 'GIoULoss' and rpn.reg_decoded_bbox
    assert rpn.bbox_coder.target_stds == stds
    assert model.train_cfg.rpn.sampler == dict(type='PseudoSampler')
    sampler = model.train_cfg.rcnn.sampler
    assert sampler.num >= 1e5 and sampler.pos_fraction == 1
    roi = model.roi_head
    assert roi.type == 'RankSortRoIHead' and roi.max_mask_rois == 200
    assert roi.bbox_head.type == 'RankSortBBoxHead'
    assert roi.bbox_head.loss_cls == dict(type='RankSortLoss', delta=0.5)
    assert roi.bbox_head.loss_bbox.type == 'GIoULoss'
    assert roi.bbox_head.reg_decoded_bbox
    assert roi.bbox_head.bbox_coder.target_stds == stds
    assert roi.mask_head.type == 'RankSortMaskHead'
    # 1 - 2 sum(pt) / (sum p^2 + sum t^2 + 1e-5): MMDetection's DiceLoss
    # adds eps to each sum
    assert roi.mask_head.loss_mask == dict(
        type='DiceLoss', use_sigmoid=True, activate=True, naive_dice=False,
        eps=5e-6, loss_weight=1.0)
    assert model.test_cfg.rcnn.score_thr == 0.4
    assert cfg.train_dataloader.batch_size == 4
    assert cfg.optim_wrapper.optimizer.lr == 0.012
    assert cfg.auto_scale_lr == dict(enable=True, base_batch_size=16)
    assert cfg.val_evaluator.metric == ['bbox', 'segm']


def test_coco_mix_is_mmdetections_mask_rcnn_with_the_loss():
    mix = load(COCO['rambo-bce'])
    stock = Config.fromfile(osp.join(
        osp.dirname(__import__('mmdet').__file__), '.mim', 'configs',
        'mask_rcnn', 'mask-rcnn_r50_fpn_1x_coco.py'))
    loss = mix.model.roi_head.bbox_head.loss_cls
    assert loss.type == 'MixedRankLoss'
    assert loss.rank_loss.type == 'RaMBOAPLoss'
    assert loss.aux_loss == dict(type='CrossEntropyLoss', use_sigmoid=True,
                                 loss_weight=1.0)
    # (an mmdet:: base records its scope)
    assert _without(mix.model.to_dict(), 'roi_head.bbox_head.loss_cls',
                    '_scope_') == \
        _without(stock.model.to_dict(), 'roi_head.bbox_head.loss_cls')
    assert mix.optim_wrapper.optimizer == stock.optim_wrapper.optimizer
    assert mix.train_dataloader.batch_size == \
        stock.train_dataloader.batch_size
