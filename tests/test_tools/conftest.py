"""Shared fixtures of the tool tests: the tools are scripts, not modules of
the package, so tests load them from their file."""
import importlib.util
import os.path as osp

import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def _load(relpath: str):
    name = osp.splitext(osp.basename(relpath))[0]
    spec = importlib.util.spec_from_file_location(
        f'tool_{name}', osp.join(ROOT, relpath))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope='session')
def load_tool():
    """``load_tool('tools/study.py')`` -> the script as a module."""
    return _load
