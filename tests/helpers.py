"""Plain functions shared by test modules; the fixtures are in conftest.py.

A test module imports this as ``helpers`` (``from helpers import
read_config``): pytest puts ``tests/`` on ``sys.path`` when it loads
``tests/conftest.py`` (its default ``prepend`` import mode, for a folder
that is not a package), as it puts ``tests/test_losses`` there for that
folder's ``_device_modes``.

* ``read_config(path)``: a config parsed once per run, as a copy (a test
  may change it).
* ``scaled_lr(cfg, world_size, options=None)``: the lr MMEngine's
  ``Runner.scale_lr`` gives the config's optimizer.
* ``point_at(cfg, root)``: the config's data (and COCO metrics) on a
  written DigitsVOC, small loaders.
* ``read_tree(root)``: ``{relative path: bytes}`` of every file below
  ``root``.
* ``device_modes()``: ``tests/test_losses/_device_modes.py`` (``ShadowMeta``)
  for a test outside that folder, the one module its tests import.
"""
import copy
import functools
import os
import os.path as osp
from types import SimpleNamespace


@functools.lru_cache(maxsize=None)
def _parsed(path):
    from mmengine.config import Config
    return Config.fromfile(path)


def read_config(path):
    """The config at ``path``, parsed once per run (a copy: a test may
    change it)."""
    return copy.deepcopy(_parsed(osp.abspath(path)))


def scaled_lr(cfg, world_size, options=None):
    """The lr MMEngine's ``Runner.scale_lr`` gives the config's optimizer
    with ``world_size`` processes and the ``--cfg-options`` ``options``
    (the Runner's own method, run on the attributes it reads)."""
    import torch
    from mmengine.config import Config
    from mmengine.optim import OptimWrapper
    from mmengine.runner import Runner
    if options:  # the keys scale_lr reads, with the options merged
        cfg = Config({k: cfg[k] for k in ('train_dataloader', 'optim_wrapper',
                                         'auto_scale_lr') if k in cfg})
        cfg.merge_from_dict(options)
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([param], lr=cfg.optim_wrapper.optimizer.lr)
    runner = SimpleNamespace(
        _train_dataloader=cfg.train_dataloader, world_size=world_size,
        logger=SimpleNamespace(info=lambda message: None),
        param_schedulers=None)
    Runner.scale_lr(runner, OptimWrapper(optimizer), cfg.get('auto_scale_lr'))
    return optimizer.param_groups[0]['lr']


def point_at(cfg, root):
    """The config's data, and its COCO metrics (those with an
    ``ann_file``), on the DigitsVOC at ``root``; loaders of batch 2 without
    workers."""
    for split in ('train', 'val', 'test'):
        loader = cfg[f'{split}_dataloader']
        loader.dataset.data_root = root
        loader.num_workers = 0
        loader.persistent_workers = False
        loader.batch_size = 2
    for split in ('val', 'test'):
        evaluator = cfg[f'{split}_evaluator']
        if 'ann_file' in evaluator:
            evaluator.ann_file = osp.join(
                root, 'annotations', f'instances_{split}.json')


def read_tree(root):
    """``{path relative to root: bytes}`` of every file below ``root``."""
    out = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = osp.join(dirpath, name)
            with open(path, 'rb') as f:
                out[osp.relpath(path, root)] = f.read()
    return out


def device_modes():
    """``tests/test_losses/_device_modes.py`` as a module, loaded once (the
    same module as ``import _device_modes`` in ``tests/test_losses``)."""
    import importlib.util
    import sys
    if '_device_modes' not in sys.modules:
        path = osp.join(osp.dirname(__file__), 'test_losses',
                        '_device_modes.py')
        spec = importlib.util.spec_from_file_location('_device_modes', path)
        module = importlib.util.module_from_spec(spec)
        sys.modules['_device_modes'] = module
        spec.loader.exec_module(module)
    return sys.modules['_device_modes']
