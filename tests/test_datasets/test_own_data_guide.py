"""docs/own_data.md works as written: its configs and commands are copied
from the page (the fenced blocks after the ``own-data-...`` markers, so page
and test cannot drift), a tiny COCO-format dataset is written in the page's
layout (its absolute ``data_root`` pointed at a temporary folder), and each
config trains a few iterations and evaluates with CocoMetric; the twins are
the shipped cross-entropy / focal recipes on the same data; the split, the
short schedule and the threshold commands do what the page says; the R50
bases, the VOC hold-out config and the VOC-layout datasets load as the page
says."""
import os
import os.path as osp
import pickle
import re
import shlex

import numpy as np
import pytest

from rankloss_lab.datasets import TOY_CLASSES, make_toy_coco

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
PAGE = osp.join(ROOT, 'docs', 'own_data.md')

pytestmark = pytest.mark.usefixtures('one_torch_thread')


PAGE_ROOT = '/data/my_dataset/'


def page_text() -> str:
    with open(PAGE, encoding='utf-8') as f:
        return f.read()


def page_block(marker: str, lang: str = 'python') -> str:
    """The fenced code block that follows ``<!-- marker -->`` on the page."""
    m = re.search(rf'<!-- {re.escape(marker)} -->\n```{lang}\n(.*?)```',
                  page_text(), re.S)
    assert m, f'docs/own_data.md has no block after <!-- {marker} -->'
    return m.group(1)


def page_commands(marker: str, root: str = PAGE_ROOT) -> list:
    """The commands of a shell block, as argument lists, with the page's
    data folder replaced by ``root``."""
    block = re.sub(r'\\\n\s*', ' ', page_block(marker, 'bash'))
    return [shlex.split(line.split('  #')[0].replace(PAGE_ROOT, root))
            for line in block.splitlines() if line.strip()]


def with_base(code: str, base_block: str) -> str:
    """``code`` with its ``_base_`` line replaced by the one of
    ``base_block`` (the page's "for real images" variant, or a recipe)."""
    base = re.search(r"^_base_ = .*$", base_block, re.M).group(0)
    out, n = re.subn(r"^_base_ = .*$", base, code, count=1, flags=re.M)
    assert n == 1
    return out


def with_root(code: str, root: str) -> str:
    """``code`` with the page's data folder replaced by ``root``."""
    assert code.count(f"data_root = '{PAGE_ROOT}'") == 1
    return code.replace(f"data_root = '{PAGE_ROOT}'", f"data_root = '{root}'")


@pytest.fixture
def my_dataset(tmp_path, monkeypatch):
    """The page's layout in a temporary folder (the path the configs get
    as their ``data_root``), and another folder as the working directory:
    nothing depends on where the commands start."""
    root = tmp_path / 'data' / 'my_dataset'
    make_toy_coco(str(root), splits=(('train', 16), ('val', 4),
                                     ('test', 4)), image_size=64)
    work = tmp_path / 'work_here'
    work.mkdir()
    monkeypatch.chdir(work)
    return f'{root}/'


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


def check_page_settings(cfg, root):
    """What the page says the config sets: classes, paths, num_classes,
    evaluator, batch; the lr is the base's, scaled by auto_scale_lr."""
    from rankloss_lab.batch import resolve_batch
    assert tuple(cfg.metainfo.classes) == TOY_CLASSES
    assert num_classes_of(cfg) == len(TOY_CLASSES)
    for split in ('train', 'val', 'test'):
        ds = cfg[f'{split}_dataloader'].dataset
        assert ds.type == 'CheckedCocoDataset'
        assert ds.ann_file == f'annotations/{split}.json'
        assert ds.data_root == root
        assert ds.test_mode == (split != 'train')
        assert ds.filter_cfg.filter_empty_gt == (split == 'train')
        assert cfg[f'{split}_dataloader'].batch_size == 8
    for split in ('val', 'test'):
        ev = cfg[f'{split}_evaluator']
        assert ev.type == 'CocoMetric' and ev.metric == 'bbox'
        assert ev.ann_file == f'{root}annotations/{split}.json'
    plan = resolve_batch(cfg, 1)
    assert plan.total == 8 and plan.lr == pytest.approx(
        plan.config_lr * 8 / cfg.auto_scale_lr.base_batch_size)


@pytest.mark.parametrize('recipe', ['faster-rcnn', 'atss'])
def test_the_data_is_set_in_one_place(recipe):
    """The folder, each annotation file and the classes are written once;
    the folder is absolute."""
    code = page_block(f'own-data-config: {recipe}')
    assert code.count(f"'{PAGE_ROOT}'") == 1 and osp.isabs(PAGE_ROOT)
    for split in ('train', 'val', 'test'):
        assert code.count(f'{split}.json') == 1
    assert code.count('classes = (') == 1


@pytest.mark.slow
@pytest.mark.parametrize('recipe', ['faster-rcnn', 'atss'])
def test_the_page_config_trains_and_evaluates_with_coco_metric(
        recipe, my_dataset, tmp_path):
    from mmengine.runner import Runner
    cfg = load(tmp_path, with_root(page_block(f'own-data-config: {recipe}'),
                                   my_dataset))
    check_page_settings(cfg, my_dataset)
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

    from rankloss_lab.batch import resolve_batch
    code = with_base(with_root(page_block(f'own-data-config: {recipe}'),
                               my_dataset),
                     page_block(f'own-data-base: {recipe}'))
    cfg = load(tmp_path, code)
    check_page_settings(cfg, my_dataset)
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

    from rankloss_lab.datasets import make_toy_voc
    monkeypatch.chdir(tmp_path)
    root = str(tmp_path / 'data' / 'my_voc' / 'VOCdevkit')
    make_toy_voc(root, num_trainval=4, num_test=2, num_val=2, image_size=64)
    main = osp.join(root, 'VOC2007', 'ImageSets', 'Main')
    os.rename(osp.join(main, 'trainval.txt'), osp.join(main, 'train.txt'))
    voc = page_block('own-data-voc-datasets')
    assert voc.count("'/data/my_voc/VOCdevkit/'") == 1
    code = page_block('own-data-config: faster-rcnn') + '\n' + voc.replace(
        '/data/my_voc/VOCdevkit/', f'{root}/')
    cfg = load(tmp_path, code)
    assert cfg.val_evaluator.type == 'VOCMetric'
    init_default_scope('mmdet')
    for split, n in (('train', 4), ('val', 2), ('test', 2)):
        ds_cfg = cfg[f'{split}_dataloader'].dataset
        assert ds_cfg.type == 'CheckedVOCDataset'
        dataset = DATASETS.build(ds_cfg)
        assert len(dataset) == n
        assert dataset.metainfo['classes'] == TOY_CLASSES


# --- the twins: the shipped baseline recipe on the same data ---------------

TWINS = [
    # (page config, twin file, the shipped baseline recipe, its R50 twin)
    ('faster-rcnn', 'my_faster-rcnn.py',
     'mmdet_rankloss::digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py',
     'mmdet_rankloss::rambo/faster-rcnn_r50_fpn_ce_1x_coco.py'),
    ('atss', 'my_atss.py',
     'mmdet_rankloss::dense/atss/atss_r18-w32_fpn_focal_16e_digitsvoc.py',
     'mmdet_rankloss::dense/atss/atss_r50_fpn_focal_1x_coco.py'),
]
SAME = ('model', 'optim_wrapper', 'param_scheduler', 'train_cfg',
        'auto_scale_lr', 'train_dataloader', 'val_dataloader',
        'test_dataloader', 'val_evaluator', 'test_evaluator')


@pytest.mark.parametrize('recipe, name, baseline, baseline_r50', TWINS)
@pytest.mark.parametrize('r50', [False, True], ids=['small', 'r50'])
def test_a_twin_is_the_baseline_recipe_on_the_same_data(
        recipe, name, baseline, baseline_r50, r50, my_dataset, tmp_path):
    """The twin, saved beside the page's config, equals the page's config
    with its _base_ swapped for the shipped cross-entropy / focal recipe:
    same data, detector, lr, schedule and hooks; its model builds."""
    from mmdet.registry import MODELS

    from rankloss_lab.batch import resolve_batch
    page = with_root(page_block(f'own-data-config: {recipe}'), my_dataset)
    twin = page_block(f'own-data-twin: {recipe}')
    if r50:
        page = with_base(page, page_block(f'own-data-base: {recipe}'))
        # the page: with the R50 base, delete the optim_wrapper line
        twin = re.sub(r'^optim_wrapper = .*\n', '', twin, flags=re.M)
        baseline = baseline_r50
    (tmp_path / name).write_text(page)
    cfg = load(tmp_path, twin, 'my_twin.py')
    ref = load(tmp_path, with_base(page, f"_base_ = '{baseline}'"),
               'reference.py')
    for key in SAME:
        assert cfg[key] == ref[key], key
    assert cfg.get('custom_hooks', []) == ref.get('custom_hooks', [])
    assert resolve_batch(cfg, 1).lr == pytest.approx(
        resolve_batch(ref, 1).lr)
    MODELS.build(cfg.model)


# --- the commands -----------------------------------------------------------


def command_options(args):
    """``--cfg-options`` of a command, merged as tools/train.py merges
    them (the docs test's parser: MMEngine's DictAction)."""
    import importlib.util
    path = osp.join(osp.dirname(osp.dirname(osp.abspath(__file__))),
                    'test_docs', 'test_doc_snippets.py')
    spec = importlib.util.spec_from_file_location('_doc_snippets', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.command_options(args)


def test_the_split_command(tmp_path, load_tool):
    """The page's split of a trainval file: train and val, 4 in 5 and 1 in
    5 of the images, that load with the page's config."""
    import json
    root = tmp_path / 'data' / 'my_dataset'
    make_toy_coco(str(root), splits=(('trainval', 20), ('test', 4)),
                  image_size=64)
    (cmd, ) = page_commands('own-data-commands: split', f'{root}/')
    assert cmd[:2] == ['python', 'tools/misc/split_coco.py']
    load_tool(cmd[1]).main(cmd[2:])
    sizes = [len(json.loads((root / 'annotations' / f'{s}.json')
                            .read_text())['images']) for s in ('train', 'val')]
    assert sizes == [16, 4]


def test_the_train_commands_name_the_page_configs():
    files = ('work_dirs/my_faster-rcnn.py', 'work_dirs/my_faster-rcnn_ce.py')
    text = page_text()
    for cmd in page_commands('own-data-commands: train'):
        assert cmd[0] == 'python' and cmd[2] in files, cmd
        assert f'`{cmd[2]}`' in text  # the page says to save it
        assert not command_options(cmd[3:])


def test_the_short_schedule_moves_the_lr_drop(tmp_path):
    """The page's 4-epoch command: 4 epochs, the lr drops for the last one
    (the base's drop at epoch 12 of 16 would never come), the warm-up
    (iterations) shrinks with the epochs, 4/16 of the small base's; the
    schedule on both bases."""
    import torch
    from mmengine.optim import MultiStepLR
    (cmd, ) = page_commands('own-data-commands: short')
    assert cmd[2] == 'work_dirs/my_faster-rcnn.py'
    options = command_options(cmd[3:])
    page = page_block('own-data-config: faster-rcnn')
    for code in (page, with_base(page, page_block(
            'own-data-base: faster-rcnn'))):
        cfg = load(tmp_path, code)
        warmup, epochs = cfg.param_scheduler[0], cfg.train_cfg.max_epochs
        cfg.merge_from_dict(options)
        assert cfg.train_cfg.max_epochs == 4
        short = cfg.param_scheduler[0]
        assert dict(short, end=warmup.end) == warmup and not short.by_epoch
        if code is page:
            assert short.end * epochs == warmup.end * 4
        step = dict(cfg.param_scheduler[1])
        assert step.pop('type') == 'MultiStepLR' and step['by_epoch']
        step.pop('_scope_', None)
        optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)],
                                    lr=1.0)
        scheduler = MultiStepLR(optimizer, **step)
        lrs = []
        for _ in range(cfg.train_cfg.max_epochs):
            lrs.append(optimizer.param_groups[0]['lr'])
            scheduler.step()
        assert lrs == pytest.approx([1.0, 1.0, 1.0, 0.1])


def _detections(dataset_json, categories, rng):
    """``tools/test.py --out`` results for a COCO file: every object found
    (score 0.6-0.9), one box on nothing per image (score 0.2-0.5)."""
    import json
    import torch
    data = json.loads(open(dataset_json).read())
    out = []
    for img in data['images']:
        anns = [a for a in data['annotations'] if a['image_id'] == img['id']]
        boxes = [[x, y, x + w, y + h] for x, y, w, h in
                 (a['bbox'] for a in anns)] + [[0, 0, 3, 3]]
        labels = [categories.index(a['category_id']) for a in anns] + [0]
        scores = list(rng.uniform(0.6, 0.9, len(anns))) + \
            [rng.uniform(0.2, 0.5)]
        out.append(dict(img_id=img['id'], img_path=osp.join(
            osp.dirname(osp.dirname(dataset_json)), 'images',
            img['file_name']),
                        pred_instances=dict(
                            bboxes=torch.tensor(boxes, dtype=torch.float32),
                            scores=torch.tensor(scores), labels=torch.tensor(
                                labels))))
    return out


@pytest.mark.slow
def test_the_threshold_commands(my_dataset, tmp_path, load_tool):
    """The page's threshold commands on detections of the toy set: the val
    dump reads val (dataset and evaluator), the tool chooses a threshold
    per class on val that drops the boxes on nothing, writes a config that
    keeps the base's hooks and adds ClassScoreThresholdHook, and the last
    command's config loads and builds its hooks."""
    from mmdet.registry import HOOKS
    from mmengine.config import Config

    from rankloss_lab.datasets import TOY_CATEGORY_IDS
    val_dump, test_dump, fit, final = page_commands(
        'own-data-commands: thresholds', my_dataset)
    page = with_root(page_block('own-data-config: faster-rcnn'), my_dataset)
    # the page's configs and everything the commands write: in work_dirs/
    (tmp_path / 'work_here' / 'work_dirs' / 'my_faster-rcnn').mkdir(
        parents=True)
    (tmp_path / 'work_here' / 'work_dirs' / 'my_faster-rcnn.py').write_text(
        page)
    cfg = Config.fromfile('work_dirs/my_faster-rcnn.py')
    cfg.merge_from_dict(command_options(val_dump))
    assert cfg.test_dataloader == cfg.val_dataloader
    assert cfg.test_evaluator == cfg.val_evaluator
    assert not command_options(test_dump)
    rng = np.random.default_rng(0)
    for split, dump in (('val', val_dump), ('test', test_dump)):
        out = dump[dump.index('--out') + 1]
        assert out.startswith('work_dirs/')
        with open(out, 'wb') as f:
            pickle.dump(_detections(f'{my_dataset}annotations/{split}.json',
                                    TOY_CATEGORY_IDS, rng), f)
    assert fit[1] == 'tools/analysis_tools/fit_class_thresholds.py'
    result = load_tool(fit[1]).main(fit[2:])
    # every kept threshold lies above the boxes on nothing (<= 0.5) and at
    # or below the class's lowest true score (>= 0.6)
    for o in result['optimal']:
        if o is not None:
            assert 0.5 < o['threshold'] <= 0.9 and o['oLRP'] == 0.0
    per_class = result['test']['per class (val)']
    assert per_class['boxes'] < result['test']['as given']['boxes']
    assert final[2] == fit[fit.index('--write-config') + 1] == \
        'work_dirs/my_faster-rcnn_thresholds.py'
    written = Config.fromfile(final[2])
    hooks = [h['type'] for h in written.custom_hooks]
    assert hooks == [h['type'] for h in cfg.custom_hooks] + [
        'ClassScoreThresholdHook']
    hook = HOOKS.build(written.custom_hooks[-1])
    assert set(hook.thresholds) <= set(TOY_CLASSES)
    assert all(c['type'] == 'isotonic' for c in hook.calibration.values())
