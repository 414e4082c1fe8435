"""The peer-loss retrieval configs load, build and take a training step."""
import glob
import os.path as osp

import pytest
import torch
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
    before = model.embedding.weight.detach().clone()
    logs = model.train_step(data, wrapper)
    assert torch.isfinite(logs['loss'])
    assert not torch.equal(before, model.embedding.weight)
