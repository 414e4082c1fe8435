"""``ops/`` holds tensor functions only, and the layers import downwards.

``docs/architecture.md``: ops <- networks <- losses <- models. The SoDeep
sorter networks (``networks/``) import only ``ops/``; ``losses/`` imports
``ops/`` and ``networks/``, never ``models/`` (which imports ``losses/``).
"""
import ast
import importlib
import inspect
import os
import os.path as osp
import pkgutil

import torch.nn as nn

import mmdet_rankloss.ops

PACKAGE = osp.dirname(osp.dirname(mmdet_rankloss.ops.__file__))


def ops_modules():
    yield mmdet_rankloss.ops
    for info in pkgutil.walk_packages(mmdet_rankloss.ops.__path__,
                                      'mmdet_rankloss.ops.'):
        yield importlib.import_module(info.name)


def test_ops_hold_no_module():
    found = [
        f'{module.__name__}.{name}' for module in ops_modules()
        for name, value in vars(module).items()
        if inspect.isclass(value) and issubclass(value, nn.Module)
    ]
    assert found == [], found


def package_imports(path):
    """The subpackages of mmdet_rankloss that the file imports (relative or
    absolute, at any depth of the file)."""
    tree = ast.parse(open(path).read())
    here = osp.relpath(osp.dirname(path), PACKAGE).split(osp.sep)
    here = [] if here == ['.'] else here
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                parts = base + (node.module.split('.') if node.module else [])
            elif (node.module or '').startswith('mmdet_rankloss'):
                parts = node.module.split('.')[1:]
            else:
                continue
            if parts:
                found.add(parts[0])
            else:  # `from .. import x`
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith('mmdet_rankloss.'):
                    found.add(alias.name.split('.')[1])
    return found


def files(sub):
    folder = osp.join(PACKAGE, sub)
    return sorted(
        osp.join(folder, name) for name in os.listdir(folder)
        if name.endswith('.py'))


def test_ops_import_only_ops():
    for path in files('ops'):
        assert package_imports(path) <= {'ops'}, path


def test_networks_import_only_ops():
    for path in files('networks'):
        assert package_imports(path) <= {'ops', 'networks'}, path


def test_losses_import_no_higher_layer():
    # optional_mmdet: MMDetection's registries, or stand-ins without it
    for path in files('losses'):
        assert package_imports(path) <= {'ops', 'networks', 'losses',
                                         'optional_mmdet'}, (
            path, package_imports(path))
