"""Every retrieval config loads, builds and trains a step (on mini data)."""
import ast
import glob
import os
import os.path as osp
import re

import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope
from mmengine.runner import Runner

import mmdet_rankloss  # noqa: F401
from mmdet.registry import MODELS

init_default_scope('mmdet')

CONFIG_DIR = osp.join(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__)))), 'configs',
    'retrieval')
CONFIGS = sorted(
    osp.basename(p) for p in glob.glob(osp.join(CONFIG_DIR, '*.py')))
# every file: the configs above, the peers' and the bases
ALL_FILES = sorted(
    glob.glob(osp.join(CONFIG_DIR, '**', '*.py'), recursive=True))

# Appendix A / Table 9 of the paper: lr, margin, lambda per dataset.
PAPER = {
    'cub200': (5e-6, 0.02, 0.2, (1, 2, 4, 8)),
    'sop': (3e-6, 0.02, 4.0, (1, 10, 100, 1000)),
    'inshop': (1e-5, 0.05, 0.2, (1, 10, 20, 30, 40, 50)),
}


def test_model_bases_name_no_loss():
    """The loss comes from a recipe in `_base_/losses/` (or the config):
    nothing to undo with `_delete_`."""
    paths = glob.glob(osp.join(CONFIG_DIR, '_base_', 'models', '*.py'))
    assert len(paths) == 2
    for path in paths:
        model = Config.fromfile(path).model
        assert model.type == 'RetrievalModel' and 'loss' not in model, path


def test_no_config_deletes_a_loss(parse_config):
    """`_delete_` may replace a sampler or an optimizer, never a loss: a
    config that trains a loss other than its base's picks another recipe."""
    for path in ALL_FILES:
        for node in ast.walk(parse_config(path)):
            if isinstance(node, ast.keyword) and node.arg == 'loss':
                assert isinstance(node.value, ast.Call), path
                keys = [k.arg for k in node.value.keywords]
                assert '_delete_' not in keys, (path, node.lineno)


def test_every_loss_recipe_is_used_and_names_its_loss(config_bases):
    recipes = sorted(
        glob.glob(osp.join(CONFIG_DIR, '_base_', 'losses', '*.py')))
    assert len(recipes) == 6
    used = {b for path in ALL_FILES for b in config_bases(path)}
    for path in recipes:
        assert path in used, path
        cfg = Config.fromfile(path)
        assert cfg.model.type == 'RetrievalModel' and cfg.model.loss.type
        assert 'train_dataloader' not in cfg  # the dataset comes from the
        # config, which pairs one recipe with one dataset


def dataset_of(name):
    return osp.splitext(name)[0].rsplit('_', 1)[-1]


def write_image(path, seed):
    import cv2
    rng = np.random.default_rng(seed)
    assert cv2.imwrite(path, rng.integers(0, 255, (20, 24, 3), np.uint8))


def make_mini(root, dataset):
    """A miniature copy of the official layout: 8 classes x 4 images."""
    lines = []
    for i in range(32):
        cls = i // 4
        sup = cls % 2  # two super-classes
        if dataset == 'cub200':
            folder, cls = f'{cls:03d}.c', cls + (1 if cls < 4 else 97)
            rel = f'{folder}/{i}.jpg'
            path = osp.join(root, 'images', rel)
        elif dataset == 'sop':
            rel = f's{sup}_final/{cls}_{i}.JPG'
            path = osp.join(root, rel)
        else:
            rel = f'img/MEN/Cat{sup}/id_{cls:08d}/{i}.jpg'
            path = osp.join(root, rel)
        os.makedirs(osp.dirname(path), exist_ok=True)
        write_image(path, i)
        lines.append((i + 1, cls, sup, rel))

    def write(name, rows):
        with open(osp.join(root, name), 'w') as f:
            f.write('\n'.join(rows) + '\n')

    if dataset == 'cub200':
        write('images.txt', [f'{i} {rel}' for i, _, _, rel in lines])
        write('image_class_labels.txt', [f'{i} {c}' for i, c, _, _ in lines])
    elif dataset == 'sop':
        header = 'image_id class_id super_class_id path'
        for split in ('train', 'test'):  # ids from 1, as in the official files
            write(f'Ebay_{split}.txt', [header] + [
                f'{i} {c + 1} {s + 1} {r}' for i, c, s, r in lines
            ])
    else:
        status = ['train'] * 16 + ['query', 'gallery'] * 8
        write('list_eval_partition.txt',
              ['32', 'image_name item_id evaluation_status'] + [
                  f'{r} id_{c:08d} {status[i - 1]}'
                  for i, c, _, r in lines
              ])


@pytest.mark.parametrize('name', CONFIGS)
def test_config_follows_the_paper(name):
    cfg = Config.fromfile(osp.join(CONFIG_DIR, name))
    assert cfg.model.type == 'RetrievalModel'
    assert 'mmdet_rankloss' in cfg.custom_imports.imports
    loader = cfg.train_dataloader
    # the sampler plans batches of the dataloader's size
    assert loader.sampler.batch_size == loader.batch_size
    checkpoint = cfg.default_hooks.checkpoint
    assert checkpoint.save_best == 'retrieval/R@1'
    assert checkpoint.rule == 'greater'
    assert cfg.optim_wrapper.paramwise_cfg.custom_keys.embedding.lr_mult == 10
    dataset = dataset_of(name)
    if dataset == 'digit-instances':
        check_digit_instances(cfg)
        return
    lr, margin, lambda_val, ks = PAPER[dataset]
    # the loss in full: nothing more, nothing less
    assert cfg.model.loss == dict(
        type='RaMBORecallLoss',
        weighting='loglog' if 'loglog' in name else 'log',
        lambda_val=lambda_val,
        margin=margin,
        memory=3)
    assert cfg.optim_wrapper.optimizer == dict(
        type='Adam', lr=lr, weight_decay=4e-4)
    assert tuple(cfg.val_evaluator.topk) == ks
    assert cfg.test_dataloader == cfg.val_dataloader
    assert loader.batch_size == 128
    assert cfg.param_scheduler == [
        dict(type='MultiStepLR', by_epoch=True, milestones=[35], gamma=0.3)
    ]
    # CUB is small: evaluated (and its best checkpoint kept) every 2 epochs
    every = 2 if dataset == 'cub200' else 5
    assert (cfg.train_cfg.max_epochs, cfg.train_cfg.val_interval) == (80,
                                                                      every)
    assert checkpoint.interval == every
    assert cfg.model.pooling == 'avg' and 'hidden_dims' not in cfg.model
    assert cfg.model.backbone.depth == 50 and cfg.model.backbone.norm_eval
    assert cfg.model.backbone.init_cfg.checkpoint == 'torchvision://resnet50'
    assert cfg.model.embed_dim == 512
    assert loader.dataset.type == dict(
        cub200='CUB200Dataset', sop='SOPDataset',
        inshop='InShopDataset')[dataset]
    sampler = loader.sampler
    if dataset == 'cub200':
        assert (sampler.type, sampler.num_per_class) == ('PKSampler', 4)
    else:
        assert sampler.type == 'SuperClassPairSampler'
        assert (sampler.num_per_class, sampler.batches_per_pair) == (
            (4, 10) if dataset == 'sop' else (8, 4))
    crop = [t for t in loader.dataset.pipeline if t.type == 'RandomCrop']
    assert crop[0].crop_size == (224, 224)
    # the full model builds and embeds (ResNet-50, 2048 -> 512)
    cfg.model.backbone.init_cfg = None
    model = MODELS.build(cfg.model)
    with torch.no_grad():
        emb = model(torch.zeros(2, 3, 64, 64), mode='tensor')
    assert emb.shape == (2, 512)


def check_digit_instances(cfg):
    """The instance demo: the quickstart's model on 3-channel views, the
    loss settings chosen on val (docs/retrieval.md), val and test on
    disjoint instances, views fixed for both."""
    assert cfg.model.backbone.depth == 18
    assert cfg.model.backbone.base_channels == 16
    assert cfg.model.backbone.in_channels == 3
    assert cfg.model.backbone.zero_init_residual is False
    assert cfg.model.backbone.init_cfg is None
    assert not cfg.model.backbone.norm_eval
    assert (cfg.model.in_channels, cfg.model.embed_dim) == (128, 64)
    assert cfg.model.data_preprocessor == dict(
        type='ImgDataPreprocessor', mean=[127.5] * 3, std=[127.5] * 3)
    assert cfg.model.loss == dict(
        type='RaMBORecallLoss', weighting='log', lambda_val=1.0,
        margin=0.02, memory=0)
    assert cfg.optim_wrapper.optimizer == dict(
        type='Adam', lr=1e-3, weight_decay=4e-4)
    loader = cfg.train_dataloader
    assert loader.sampler == dict(
        type='PKSampler', batch_size=60, num_per_class=2)
    splits = {key: cfg[key].dataset for key in (
        'train_dataloader', 'val_dataloader', 'test_dataloader')}
    assert [d.type for d in splits.values()] == ['DigitInstancesDataset'] * 3
    assert [d.split for d in splits.values()] == ['train', 'val', 'test']
    train = splits['train_dataloader'].pipeline[0]
    for key in ('val_dataloader', 'test_dataloader'):
        fixed = dict(splits[key].pipeline[0])
        assert fixed.pop('seed') == 0 and fixed == train
    assert 'seed' not in train and train.type == 'RandomDigitScene'
    assert (cfg.train_cfg.max_epochs, cfg.train_cfg.val_interval) == (20, 5)
    assert cfg.param_scheduler == [
        dict(type='MultiStepLR', by_epoch=True, milestones=[15], gamma=0.3)
    ]


# one loss per dataset through the Runner: a `_rambo-loglog_` config is its
# `_rambo-log_` twin with the other RaMBO recall loss (built above)
@pytest.mark.slow
@pytest.mark.parametrize('name', [c for c in CONFIGS
                                  if '_rambo-loglog_' not in c])
def test_config_trains_a_step_and_evaluates(name, tmp_path):
    cfg = Config.fromfile(osp.join(CONFIG_DIR, name))
    dataset = dataset_of(name)
    cfg.work_dir = str(tmp_path / 'work')
    cfg.model.backbone.init_cfg = None  # never download weights in tests
    digits = dataset == 'digit-instances'
    if not digits:  # shrink: the full model is built above
        cfg.model.backbone.update(depth=18, base_channels=8)
        cfg.model.in_channels = 64
    cfg.train_cfg.max_epochs = 1
    cfg.train_cfg.val_interval = 1
    # only the best checkpoint (each save also pretty-prints the config)
    cfg.default_hooks.checkpoint.update(interval=-1, save_last=False)
    cfg.default_hooks.logger.interval = 1
    size, crop = (40, 32) if not digits else (36, 32)
    for key in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        loader = cfg[key]
        loader.num_workers = 0
        loader.persistent_workers = False
        if digits and key != 'train_dataloader':
            loader.dataset.indices = 60  # rendering 896 scenes is slow
        if not digits:
            root = str(tmp_path / 'data')
            loader.dataset.data_root = root
            for t in loader.dataset.pipeline:
                if t.type == 'Resize':
                    t.scale = (size, size)
                elif t.type == 'RandomCrop':
                    t.crop_size = (crop, crop)
                elif t.type == 'CenterCrop':
                    t.crop_size = crop
    if not digits:
        make_mini(str(tmp_path / 'data'), dataset)
        per_class = cfg.train_dataloader.sampler.num_per_class
        batch_size = 2 * per_class  # two classes per batch
        cfg.train_dataloader.batch_size = batch_size
        cfg.train_dataloader.sampler.batch_size = batch_size
    cfg.train_dataloader.sampler.num_batches = 1
    runner = Runner.from_cfg(cfg)
    runner.train()
    assert runner.iter == 1
    metrics = runner.message_hub.get_info('best_score')
    assert metrics is not None and 0 <= metrics <= 1
    best = glob.glob(osp.join(cfg.work_dir, 'best_retrieval_R@1_*.pth'))
    assert len(best) == 1
