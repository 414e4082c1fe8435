"""The peer-loss retrieval configs load, build and take a training step."""
import glob
import os.path as osp

import numpy as np
import pytest
import torch
from mmcv.transforms import Compose
from mmengine.config import Config
from mmengine.optim import build_optim_wrapper
from mmengine.registry import init_default_scope
from mmengine.structures import BaseDataElement

import mmdet_rankloss  # noqa: F401
from mmdet.registry import MODELS

init_default_scope('mmdet')

PEER_DIR = osp.join(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__)))), 'configs',
    'retrieval', 'peers')
CONFIGS = sorted(
    osp.basename(p) for p in glob.glob(osp.join(PEER_DIR, '*.py')))
LOSS_OF = {
    'fastap': 'FastAPLoss',
    'srt-f': 'SoftRankThresholdLoss',
    'sodeep-recall': 'SoDeepRecallLoss',
    'auc-bh': 'AUCLoss',
    'triplet-bh': 'BatchHardTripletLoss',
}


def test_every_loss_and_dataset_has_a_config():
    assert len(CONFIGS) == 15
    for loss in LOSS_OF:
        for dataset in ('cub200', 'sop', 'inshop'):
            assert f'retrieval_r50_{loss}_80e_{dataset}.py' in CONFIGS


@pytest.mark.parametrize('name', CONFIGS)
def test_config_loads_builds_and_trains_a_step(name):
    cfg = Config.fromfile(osp.join(PEER_DIR, name))
    loss_name = name.split('_')[2]
    assert cfg.model.loss.type == LOSS_OF[loss_name]
    assert 'mmdet_rankloss' in cfg.custom_imports.imports
    loader = cfg.train_dataloader
    per_class = loader.sampler.num_per_class
    assert loader.sampler.batch_size == loader.batch_size
    assert loader.batch_size % per_class == 0
    assert cfg.model.backbone.norm_eval  # frozen BN (and FastAP's chunks)
    if loss_name == 'srt-f':
        assert (loader.batch_size, per_class) == (72, 4)
        assert cfg.model.pooling == 'max' and cfg.model.embed_dim == 128
    if loss_name in ('auc-bh', 'triplet-bh'):
        assert (loader.batch_size, per_class) == (128, 2)
    if loss_name == 'auc-bh':
        check_auc_recipe(cfg)
    if cfg.model.type == 'LargeBatchRetrievalModel':
        assert loader.batch_size == 256 and cfg.model.chunk_size == 96
    if not (name.endswith('cub200.py') or name.endswith('fastap_80e_sop.py')):
        return  # one training step per loss (and per model type) suffices
    # shrink the backbone, never download weights, take one step
    cfg.model.backbone.update(depth=18, base_channels=8, init_cfg=None)
    cfg.model.in_channels = 64
    model = MODELS.build(cfg.model).train()
    wrapper = build_optim_wrapper(model, cfg.optim_wrapper)
    n = 3 * per_class
    g = torch.Generator().manual_seed(0)
    samples = []
    for i in range(n):
        sample = BaseDataElement()
        sample.gt_label = torch.tensor(i % 3)
        samples.append(sample)
    data = dict(inputs=[torch.randint(0, 256, (3, 32, 32), generator=g,
                                      dtype=torch.uint8) for _ in range(n)],
                data_samples=samples)
    if loss_name == 'auc-bh':  # the orthogonal embedding layer
        model.init_weights()
        w = model.embedding.weight.detach().double()  # 512 x 64: columns
        eye = torch.eye(w.shape[1], dtype=w.dtype)
        assert torch.allclose(w.t() @ w, eye, atol=1e-6)
        assert torch.count_nonzero(model.embedding.bias) == 0
    before = model.embedding.weight.detach().clone()
    logs = model.train_step(data, wrapper)
    assert torch.isfinite(logs['loss'])
    assert not torch.equal(before, model.embedding.weight)


def check_auc_recipe(cfg):
    """Orthogonal embedding init; 224 px; one image per class augmented."""
    assert cfg.model.init_cfg == dict(type='Orthogonal',
                                      override=dict(name='embedding'))
    train = cfg.train_dataloader.dataset.pipeline
    assert [t['type'] for t in train] == [
        'LoadImageFromFile', 'Resize', 'AugmentLaterViews',
        'PackRetrievalInputs'
    ]
    augment = train[2]['transforms']
    types = [t['type'] for t in augment]
    for t in augment:
        if t['type'] == 'RandomApply':
            types += [inner['type'] for inner in t['transforms']]
    for wanted in ('RandomFlip', 'CutOut', 'RandomZoom', 'YOLOXHSVRandomAug',
                   'RandomMotionBlur'):
        assert wanted in types  # the paper's five augmentations
    for loader in (cfg.val_dataloader, cfg.test_dataloader):
        assert [t['type'] for t in loader.dataset.pipeline] == [
            'LoadImageFromFile', 'Resize', 'PackRetrievalInputs'
        ]
    # the pipeline after loading, on in-memory images: the first image of a
    # class is only resized, the second augmented, both 224 x 224
    pipeline = Compose(train[1:])
    np.random.seed(0)
    rng = np.random.default_rng(0)
    changed = 0
    for i in range(8):
        img = rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)
        plain, second = (pipeline(dict(img=img.copy(), gt_label=i,
                                       class_view=view))['inputs']
                         for view in (0, 1))
        assert plain.shape == second.shape == (3, 224, 224)
        resized = Compose(train[1:2])(dict(img=img.copy()))['img']
        assert torch.equal(plain, torch.from_numpy(resized).permute(2, 0, 1))
        changed += not torch.equal(plain, second)
    assert changed >= 6  # no augmentation applied: probability 1/128 each
