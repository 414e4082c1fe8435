"""docs/own_data.md works as written: its configs are copied from the page
(the fenced blocks after the ``own-data-...`` markers, so page and test
cannot drift), a tiny COCO-format dataset is written in the page's layout,
and each config trains a few iterations and evaluates with CocoMetric; the
R50 bases the page names, its VOC hold-out config and its VOC-layout
datasets load as the page says."""
import os
import os.path as osp
import re

import pytest

from mmdet_rankloss.datasets import TOY_CLASSES, make_toy_coco

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
PAGE = osp.join(ROOT, 'docs', 'own_data.md')

pytestmark = pytest.mark.usefixtures('one_torch_thread')


def page_block(marker: str) -> str:
    """The fenced code block that follows ``<!-- marker -->`` on the page."""
    with open(PAGE, encoding='utf-8') as f:
        text = f.read()
    m = re.search(rf'<!-- {re.escape(marker)} -->\n```python\n(.*?)```',
                  text, re.S)
    assert m, f'docs/own_data.md has no block after <!-- {marker} -->'
    return m.group(1)


def with_base(code: str, base_block: str) -> str:
    """``code`` with its ``_base_`` line replaced by the one of
    ``base_block`` (the page's "for real images" variant)."""
    base = re.search(r"^_base_ = .*$", base_block, re.M).group(0)
    out, n = re.subn(r"^_base_ = .*$", base, code, count=1, flags=re.M)
    assert n == 1
    return out


@pytest.fixture
def my_dataset(tmp_path, monkeypatch):
    """The page's layout under a temporary working directory:
    ``data/my_dataset/{images,annotations/{train,val,test}.json}``."""
    monkeypatch.chdir(tmp_path)
    make_toy_coco('data/my_dataset', splits=(('train', 16), ('val', 4),
                                             ('test', 4)), image_size=64)
    return tmp_path


def load(tmp_path, code, name='my_config.py'):
    from mmengine.config import Config

    import mmdet_rankloss  # noqa: F401  (mmdet_rankloss:: bases)
    path = tmp_path / name
    path.write_text(code)
    return Config.fromfile(str(path))


def num_classes_of(cfg):
    head = cfg.model.get('roi_head', {}).get('bbox_head') or \
        cfg.model.bbox_head
    return head.num_classes


def check_page_settings(cfg):
    """What the page says the config sets: classes, paths, num_classes,
    evaluator, batch; the lr is the base's, scaled by auto_scale_lr."""
    from mmdet_rankloss.utils.batch import resolve_batch
    assert tuple(cfg.metainfo.classes) == TOY_CLASSES
    assert num_classes_of(cfg) == len(TOY_CLASSES)
    for split in ('train', 'val', 'test'):
        ds = cfg[f'{split}_dataloader'].dataset
        assert ds.type == 'CheckedCocoDataset'
        assert ds.ann_file == f'annotations/{split}.json'
        assert ds.data_root == 'data/my_dataset/'
        assert ds.test_mode == (split != 'train')
        assert cfg[f'{split}_dataloader'].batch_size == 8
    for split in ('val', 'test'):
        ev = cfg[f'{split}_evaluator']
        assert ev.type == 'CocoMetric' and ev.metric == 'bbox'
        assert ev.ann_file == f'data/my_dataset/annotations/{split}.json'
    plan = resolve_batch(cfg, 1)
    assert plan.total == 8 and plan.lr == pytest.approx(
        plan.config_lr * 8 / cfg.auto_scale_lr.base_batch_size)


@pytest.mark.slow
@pytest.mark.parametrize('recipe', ['faster-rcnn', 'atss'])
def test_the_page_config_trains_and_evaluates_with_coco_metric(
        recipe, my_dataset, tmp_path):
    from mmengine.runner import Runner
    cfg = load(tmp_path, page_block(f'own-data-config: {recipe}'))
    check_page_settings(cfg)
    # a few iterations: one epoch of 16 images at the page's batch of 8,
    # then val and test; the rest is the page's config
    cfg.work_dir = str(tmp_path / 'work')
    cfg.train_cfg.max_epochs = 1
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook', interval=1,
                                        max_keep_ckpts=1)
    cfg.log_level = 'WARNING'
    if recipe == 'atss':
        # after 2 iterations every anchor scores under the stock threshold
        # (0.05) and CocoMetric would get no box to score
        cfg.model.test_cfg.score_thr = 0.0
    for split in ('train', 'val', 'test'):
        cfg[f'{split}_dataloader'].num_workers = 0
        cfg[f'{split}_dataloader'].persistent_workers = False
    runner = Runner.from_cfg(cfg)
    runner.train()
    assert runner.iter == 2
    metrics = runner.test()
    assert 'coco/bbox_mAP_50' in metrics, metrics
    assert 0.0 <= metrics['coco/bbox_mAP_50'] <= 1.0


@pytest.mark.parametrize('recipe, depth, lr', [
    ('faster-rcnn', 50, 0.02 * 8 / 16),
    ('atss', 50, 0.01 * 8 / 16),
])
def test_the_r50_bases_of_the_page(recipe, depth, lr, my_dataset, tmp_path):
    """The page's config on the R50 COCO recipe it names: same settings,
    the R50 detector, lr scaled from 16 to the page's batch of 8 (the page
    says 0.01 for Faster R-CNN); its train split loads through the R50
    pipeline."""
    from mmdet.registry import DATASETS
    from mmengine.registry import init_default_scope

    from mmdet_rankloss.utils.batch import resolve_batch
    code = with_base(page_block(f'own-data-config: {recipe}'),
                     page_block(f'own-data-base: {recipe}'))
    cfg = load(tmp_path, code)
    check_page_settings(cfg)
    assert cfg.model.backbone.depth == depth
    assert cfg.auto_scale_lr.base_batch_size == 16
    assert resolve_batch(cfg, 1).lr == pytest.approx(lr)
    init_default_scope('mmdet')
    dataset = DATASETS.build(cfg.train_dataloader.dataset)
    assert len(dataset) == 16
    item = dataset[0]
    assert item['data_samples'].gt_instances.labels.max() < len(TOY_CLASSES)


def test_the_voc_hold_out_config(tmp_path):
    """The VOC07+12 config that holds VOC2007 val out: trains on VOC2007
    train + VOC2012 trainval, validates on VOC2007 val, else unchanged."""
    cfg = load(tmp_path, page_block('own-data-voc-holdout'))
    plain = load(tmp_path, "_base_ = 'mmdet_rankloss::rambo/"
                 "faster-rcnn_r50_fpn_rambo_1x_voc0712.py'\n", 'plain.py')
    voc07, voc12 = cfg.train_dataloader.dataset.dataset.datasets
    p07, p12 = plain.train_dataloader.dataset.dataset.datasets
    assert voc07.ann_file == 'VOC2007/ImageSets/Main/train.txt'
    assert p07.ann_file == 'VOC2007/ImageSets/Main/trainval.txt'
    assert voc12 == p12 and dict(voc07, ann_file=p07.ann_file) == p07
    assert cfg.val_dataloader.dataset.ann_file == \
        'VOC2007/ImageSets/Main/val.txt'
    assert cfg.test_dataloader == plain.test_dataloader
    assert cfg.model == plain.model and cfg.optim_wrapper == \
        plain.optim_wrapper


def test_the_voc_layout_datasets(tmp_path, monkeypatch):
    """The page's VOC-layout datasets, appended to its Faster R-CNN config,
    read a VOC-layout set with the config's classes and score with
    VOCMetric."""
    from mmdet.registry import DATASETS
    from mmengine.registry import init_default_scope

    from mmdet_rankloss.datasets import make_toy_voc
    monkeypatch.chdir(tmp_path)
    root = 'data/my_voc/VOCdevkit'
    make_toy_voc(root, num_trainval=4, num_test=2, num_val=2, image_size=64)
    main = osp.join(root, 'VOC2007', 'ImageSets', 'Main')
    os.rename(osp.join(main, 'trainval.txt'), osp.join(main, 'train.txt'))
    code = page_block('own-data-config: faster-rcnn') + '\n' + page_block(
        'own-data-voc-datasets')
    cfg = load(tmp_path, code)
    assert cfg.val_evaluator.type == 'VOCMetric'
    init_default_scope('mmdet')
    for split, n in (('train', 4), ('val', 2), ('test', 2)):
        ds_cfg = cfg[f'{split}_dataloader'].dataset
        assert ds_cfg.type == 'CheckedVOCDataset'
        dataset = DATASETS.build(ds_cfg)
        assert len(dataset) == n
        assert dataset.metainfo['classes'] == TOY_CLASSES
