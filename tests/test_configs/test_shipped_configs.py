"""Promises every shipped config keeps, whatever its family.

* **Exact resume.** A config whose loss keeps a score memory (``memory > 0``,
  the loss's default included) carries the hooks that put the memory and
  the random state into each checkpoint; without them a resumed run ranks
  against an empty memory and draws other random numbers.
* **Batch size and lr.** ``auto_scale_lr`` is enabled, so
  ``tools/dist_train.sh CONFIG 8`` trains at the lr of the total batch, not
  at the single-device lr with 8x the batch (MMEngine scales the lr by
  ``world_size * batch_size / base_batch_size``).
"""
import inspect
import os.path as osp

import pytest

import mmdet_rankloss  # noqa: F401
from helpers import read_config, scaled_lr  # tests/ on sys.path
from mmdet_rankloss.losses.memory import ScoreMemoryMixin
from mmdet_rankloss.utils.config import config_files

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG_DIR = osp.join(ROOT, 'configs')
CONFIGS = config_files(CONFIG_DIR, exts=('.py', ), skip_bases=True)
MEMORY_HOOKS = [dict(type='RankLossMemoryHook'), dict(type='RandomStateHook')]


def load(name):
    """The config, parsed once per run (a copy: a test may change it)."""
    return read_config(osp.join(CONFIG_DIR, name))


def memory_losses(node, path='model'):
    """``(path, memory)`` of every loss config under ``node`` whose class
    keeps a score memory, with the class's default when unset."""
    from mmdet.registry import MODELS
    found = []
    if isinstance(node, dict):
        cls = MODELS.get(node['type']) if isinstance(
            node.get('type'), str) else None
        if inspect.isclass(cls) and issubclass(cls, ScoreMemoryMixin):
            default = inspect.signature(cls).parameters['memory'].default
            found.append((path, node.get('memory', default)))
        for key, value in node.items():
            found += memory_losses(value, f'{path}.{key}')
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            found += memory_losses(value, f'{path}[{i}]')
    return found


def test_the_walk_finds_every_family():
    families = {name.split('/')[0] for name in CONFIGS}
    assert families >= {'dense', 'digitsvoc', 'quickstart', 'rambo',
                        'rankers', 'retrieval'}
    assert len(CONFIGS) >= 60


def test_memory_detection_can_fail():
    """The walk sees a default memory (RaMBOAPLoss: 7) and an explicit 0."""
    from mmengine.registry import init_default_scope
    init_default_scope('mmdet')
    assert memory_losses(dict(a=dict(type='RaMBOAPLoss'))) == [('model.a', 7)]
    assert memory_losses(
        dict(type='MixedRankLoss', rank_loss=dict(type='RaMBOAPLoss',
                                                  memory=0))) == [
            ('model.rank_loss', 0)]
    assert memory_losses(dict(type='CrossEntropyLoss')) == []


@pytest.mark.parametrize('name', CONFIGS)
def test_memory_configs_carry_the_resume_hooks(name):
    from mmengine.registry import init_default_scope
    init_default_scope('mmdet')
    cfg = load(name)
    with_memory = [(p, m) for p, m in memory_losses(cfg.model.to_dict())
                   if m > 0]
    hooks = [dict(h) for h in cfg.get('custom_hooks', [])]
    if with_memory:
        for hook in MEMORY_HOOKS:
            assert hook in hooks, (
                f'{name}: {with_memory} keep a score memory but the config '
                f'lacks {hook["type"]} (custom_hooks: {hooks})')


def _roi_rambo(model: dict) -> bool:
    heads = model.get('roi_head', {}).get('bbox_head', {})
    for head in heads if isinstance(heads, list) else [heads]:  # cascades
        loss = head.get('loss_cls', {})
        if 'RaMBOAPLoss' in (loss.get('type'),
                             loss.get('rank_loss', {}).get('type')):
            return True
    return False


@pytest.mark.parametrize('name', CONFIGS)
def test_roi_rambo_configs_keep_logits_fp32_under_amp(name):
    """RaMBO alone diverged under --amp with fp16 logits on a GPU
    (docs/reliability.md): every RoI head that ranks with it carries the
    hook that keeps its classifier in fp32."""
    cfg = load(name)
    if not _roi_rambo(cfg.model.to_dict()):
        return
    hooks = [dict(h) for h in cfg.get('custom_hooks', [])]
    assert dict(type='RankLogitsFp32Hook') in hooks, (name, hooks)


def test_roi_rambo_detection_can_fail():
    assert _roi_rambo(dict(roi_head=dict(bbox_head=dict(loss_cls=dict(
        type='MixedRankLoss', rank_loss=dict(type='RaMBOAPLoss'))))))
    assert not _roi_rambo(dict(roi_head=dict(bbox_head=dict(loss_cls=dict(
        type='CrossEntropyLoss')))))


@pytest.mark.parametrize('name', CONFIGS)
def test_auto_scale_lr_is_on(name):
    cfg = load(name)
    scale = cfg.get('auto_scale_lr')
    assert scale is not None and scale.get('enable') is True, name
    batch = cfg.train_dataloader.batch_size
    # the lr is stated for base_batch_size: a whole number of devices
    assert scale.base_batch_size % batch == 0, (scale, batch)


@pytest.mark.parametrize('name', [
    'rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py',
    'digitsvoc/faster-rcnn_r18-w32_fpn_rambo-bce_16e_digitsvoc.py',
    'rambo/faster-rcnn_r50_fpn_rambo-bce_1x_coco.py',
    'dense/atss/atss_r50_fpn_rambo-focal_1x_coco.py',
    'retrieval/retrieval_r50_rambo-log_80e_sop.py',
    'retrieval/peers/retrieval_r50_fastap_80e_sop.py',
])
def test_the_lr_follows_the_number_of_processes(name):
    cfg = load(name)
    lr = cfg.optim_wrapper.optimizer.lr
    batch = cfg.train_dataloader.batch_size
    base = cfg.auto_scale_lr.base_batch_size
    for world_size in (1, 2, 8):
        assert scaled_lr(cfg, world_size) == pytest.approx(
            lr * world_size * batch / base)
    # the paper's one-device configs keep their lr on one device
    if base == batch:
        assert scaled_lr(cfg, 1) == pytest.approx(lr)
    assert scaled_lr(cfg, 8) == pytest.approx(8 * scaled_lr(cfg, 1))


def rank_only_losses(model):
    """The classification losses that are a RaMBO AP loss alone (no
    cross-entropy or focal term that would keep the scores probabilities)."""
    heads = [model.get('bbox_head'),
             (model.get('roi_head') or {}).get('bbox_head')]
    return [h['loss_cls'] for h in heads
            if isinstance(h, dict) and isinstance(h.get('loss_cls'), dict)
            and h['loss_cls'].get('type') == 'RaMBOAPLoss']


def test_rank_only_detection_is_found():
    cfg = load('digitsvoc/faster-rcnn_r18-w32_fpn_rambo_16e_digitsvoc.py')
    assert len(rank_only_losses(cfg.model)) == 1
    mix = load('digitsvoc/faster-rcnn_r18-w32_fpn_rambo-bce_16e_digitsvoc.py')
    assert rank_only_losses(mix.model) == []


@pytest.mark.parametrize('name', [c for c in CONFIGS
                                  if not c.startswith('retrieval/')])
def test_rank_only_configs_say_how_to_calibrate(name):
    """A RaMBO-only detector's raw scores flood a thresholded picture: its
    config carries a calibration or its header says how to fit one."""
    cfg = load(name)
    losses = rank_only_losses(cfg.model)
    if not losses or all(loss.get('calibration') for loss in losses):
        return
    with open(osp.join(CONFIG_DIR, name), encoding='utf-8') as f:
        header = f.read().split('_base_ =', 1)[0]
    assert 'fit_score_calibration.py' in header and '--write-config' in \
        header, f'{name}: RaMBO-only scores, no calibration and no header ' \
        'saying how to fit one'
