"""Lint: ``ruff check`` (``ruff.toml``: pyflakes, pycodestyle) and ``isort
--check-only`` (``.isort.cfg``: import order) find nothing in the library,
the tools and the lab; and the ``slow`` marker is set the one way
``tests/conftest.py`` states.

Each lint test is skipped only where its tool is not installed
(``tools/install.sh`` and setup.py's ``tests`` extra install both).
"""
import ast
import glob
import os.path as osp
import shutil
import subprocess
import sys

import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
#: the folders linted
LINTED = ['mmdet_rankloss', 'tools', 'lab']


def ruff_binary():
    """The ruff executable of the ``ruff`` package, else one on PATH."""
    try:
        from ruff import find_ruff_bin
        return find_ruff_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which('ruff')


def test_ruff_finds_nothing():
    ruff = ruff_binary()
    if ruff is None:
        pytest.skip('ruff is not installed (pip install ruff)')
    proc = subprocess.run(
        [ruff, 'check', '--no-cache', '--output-format', 'concise', *LINTED],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (
        f'ruff check {" ".join(LINTED)} (ruff.toml):\n'
        f'{proc.stdout}{proc.stderr}')


def test_imports_are_in_isort_order():
    isort = shutil.which('isort', path=osp.dirname(sys.executable)) or \
        shutil.which('isort')
    if isort is None:
        pytest.skip('isort is not installed (pip install isort)')
    proc = subprocess.run([isort, '--check-only', '--diff', *LINTED],
                          cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, (
        f'isort --check-only {" ".join(LINTED)} (.isort.cfg):\n'
        f'{proc.stdout[-6000:]}{proc.stderr[-2000:]}')


def _is_slow(node):
    """``pytest.mark.slow`` (or ``mark.slow``), or ``add_marker('slow')``."""
    if isinstance(node, ast.Attribute) and node.attr == 'slow':
        return ast.unparse(node.value).split('.')[-1] == 'mark'
    if isinstance(node, ast.Call) and isinstance(
            node.func, ast.Attribute) and node.func.attr == 'add_marker':
        return any(isinstance(a, ast.Constant) and a.value == 'slow'
                   for a in node.args)
    return False


def test_slow_is_a_decorator_of_its_test():
    """``@pytest.mark.slow`` on a test function or class is the only place
    of the marker: not a module's ``pytestmark``, not ``pytest.param(...,
    marks=...)``, not a conftest hook by node id (which loses the marker
    when the test is renamed)."""
    offenders = []
    for path in sorted(glob.glob(osp.join(ROOT, 'tests', '**', '*.py'),
                                 recursive=True)):
        tree = ast.parse(open(path, encoding='utf-8').read())
        decorators = {
            id(d)
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                 ast.ClassDef))
            for d in node.decorator_list
        }
        offenders += [
            f'{osp.relpath(path, ROOT)}:{node.lineno}'
            for node in ast.walk(tree)
            if _is_slow(node) and id(node) not in decorators
        ]
    assert offenders == []
