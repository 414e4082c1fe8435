"""Downstream projects inherit the configs, from a checkout or the package."""
import os
import os.path as osp
import subprocess
import sys

import pytest
import torch
from mmengine.config import Config

import mmdet_rankloss  # noqa: F401  (registers `mmdet_rankloss::`)
from mmdet_rankloss.utils.config import config_files, config_root

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
LEAF = 'rambo/faster-rcnn_r50_fpn_rambo_1x_voc07.py'
OVERRIDE = ('model = dict(roi_head=dict(bbox_head=dict('
            'loss_cls=dict(lambda_val=1.0))))\n')


def check_inherited(cfg):
    """The leaf's settings arrive, the downstream override wins."""
    loss_cls = cfg.model.roi_head.bbox_head.loss_cls
    assert loss_cls.type == 'RaMBOAPLoss'
    assert loss_cls.lambda_val == 1.0 and loss_cls.margin == 0.15
    assert cfg.optim_wrapper.optimizer.lr == 0.1  # the paper's
    assert cfg.custom_imports.imports == ['mmdet_rankloss']
    assert cfg.train_dataloader.dataset.dataset.ann_file == (
        'VOC2007/ImageSets/Main/trainval.txt')


def test_relative_base_from_checkout(tmp_path):
    """A project vendoring this repository (e.g. a git submodule)."""
    os.makedirs(tmp_path / 'third_party')
    os.symlink(ROOT, tmp_path / 'third_party' / 'mmdet_rankloss')
    os.makedirs(tmp_path / 'configs')
    path = tmp_path / 'configs' / 'my_rambo.py'
    path.write_text(
        f"_base_ = '../third_party/mmdet_rankloss/configs/{LEAF}'\n" +
        OVERRIDE)
    check_inherited(Config.fromfile(str(path)))


def test_package_base(tmp_path):
    """``_base_ = 'mmdet_rankloss::...'`` resolves to the packaged copy."""
    path = tmp_path / 'my_rambo.py'
    path.write_text(f"_base_ = 'mmdet_rankloss::{LEAF}'\n" + OVERRIDE)
    cfg = Config.fromfile(str(path))
    check_inherited(cfg)
    resolved, scope = Config._get_cfg_path(f'mmdet_rankloss::{LEAF}',
                                           str(path))
    assert scope == 'mmdet_rankloss'
    assert osp.samefile(resolved, osp.join(config_root(), LEAF))
    assert osp.samefile(resolved, osp.join(ROOT, 'configs', LEAF))
    # Dicts first defined in our configs are built in the `mmdet_rankloss`
    # registry scope, those from MMDetection's bases in `mmdet`.
    assert cfg.param_scheduler[0]._scope_ == 'mmdet_rankloss'
    assert cfg.model._scope_ == 'mmdet'


def test_package_scope_builds_schedulers(tmp_path):
    """A ``_scope_='mmdet_rankloss'`` dict finds MMEngine's and
    MMDetection's modules through the registry children."""
    from mmengine.registry import PARAM_SCHEDULERS, init_default_scope
    path = tmp_path / 'my_rambo.py'
    path.write_text(f"_base_ = 'mmdet_rankloss::{LEAF}'\n")
    cfg = Config.fromfile(str(path))
    init_default_scope('mmdet')
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    built = [
        PARAM_SCHEDULERS.build(dict(s, optimizer=optimizer))
        for s in cfg.param_scheduler
    ]
    assert [type(s).__name__ for s in built] == ['LinearLR', 'MultiStepLR']
    # ... through the scope's own registry, not MMEngine's fallback.
    from mmdet_rankloss import registry
    assert PARAM_SCHEDULERS._search_child('mmdet_rankloss') is (
        registry.PARAM_SCHEDULERS)


def test_package_scope_builds_model(tmp_path):
    from mmdet.registry import MODELS
    from mmengine.registry import init_default_scope
    path = tmp_path / 'my_quick.py'
    path.write_text("_base_ = 'mmdet_rankloss::quickstart/"
                    "faster-rcnn_r18-w32_fpn_rambo_toyvoc.py'\n")
    cfg = Config.fromfile(str(path))
    init_default_scope('mmdet')
    model = MODELS.build(cfg.model)
    assert type(model).__name__ == 'FasterRCNN'
    assert type(model.roi_head.bbox_head.loss_cls).__name__ == 'RaMBOAPLoss'


@pytest.mark.slow
def test_package_base_needs_the_import(tmp_path):
    """Without ``import mmdet_rankloss`` MMEngine refuses the package name,
    which is why MMDetection's own tools need the import first."""
    path = tmp_path / 'my_rambo.py'
    path.write_text(f"_base_ = 'mmdet_rankloss::{LEAF}'\n")
    proc = subprocess.run([
        sys.executable, '-c',
        f'from mmengine.config import Config; Config.fromfile({str(path)!r})'
    ], capture_output=True, text=True)
    assert proc.returncode != 0
    assert 'does not support to load mmdet_rankloss config' in proc.stderr


def test_packaged_configs_match_checkout():
    """All of them, retrieval, rankers and peers included; the metafiles are
    checked in tests/test_packaging/test_metafiles.py, every config loaded
    from a built wheel in tests/test_packaging/test_wheel.py."""
    files = config_files(osp.join(ROOT, 'configs'))
    for family in ('rambo/', 'rankers/', 'quickstart/', 'retrieval/_base_/',
                   'retrieval/peers/'):
        assert any(f.startswith(family) for f in files), family
    for rel in files:
        packaged = osp.join(config_root(), rel)
        with open(packaged, 'rb') as a, open(
                osp.join(ROOT, 'configs', rel), 'rb') as b:
            assert a.read() == b.read(), packaged
