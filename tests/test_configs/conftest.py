"""Shared helpers of the config tests: read a config's syntax and its own
bases without executing it."""
import ast
import os.path as osp
import re

import pytest


def _parse(path):
    """The file's syntax tree (``{{_base_.x}}`` read as a name)."""
    with open(path, encoding='utf-8') as f:
        text = re.sub(r'\{\{\s*(_base_\.[\w.]+)\s*\}\}', r'\1', f.read())
    return ast.parse(text, path)


def _bases_of(path):
    """The file's own ``_base_`` paths in this repository, resolved
    (``mmdet::`` bases are MMDetection's and end a chain)."""
    for node in _parse(path).body:
        if isinstance(node, ast.Assign) and any(
                getattr(t, 'id', None) == '_base_' for t in node.targets):
            bases = ast.literal_eval(node.value)
            bases = [bases] if isinstance(bases, str) else bases
            return [
                osp.normpath(osp.join(osp.dirname(path), b)) for b in bases
                if not b.startswith('mmdet::')
            ]
    return []


@pytest.fixture(scope='session')
def parse_config():
    """``parse_config(path)`` -> the config file's ``ast.Module``."""
    return _parse


@pytest.fixture(scope='session')
def config_bases():
    """``config_bases(path)`` -> the absolute paths of its own bases."""
    return _bases_of
