"""The layout of the repository (docs/architecture.md): the library
(``mmdet_rankloss``) holds no command-line program and no synthetic
benchmark; the lab (``lab/rankloss_lab``) and ``tools/`` import installed
packages only, and no tool imports another."""
import ast
import glob
import os.path as osp
import re
import runpy
import sys
from unittest import mock

import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
LIBRARY, LAB = 'mmdet_rankloss', osp.join('lab', 'rankloss_lab')


def _python_files(*folders):
    return sorted(p for folder in folders for p in glob.glob(
        osp.join(ROOT, folder, '**', '*.py'), recursive=True))


def _imports(path):
    """The absolute module names ``path`` imports."""
    tree = ast.parse(open(path, encoding='utf-8').read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield node.module or ''


def test_no_tool_imports_another():
    tools = {osp.splitext(osp.basename(p))[0] for p in _python_files('tools')}
    offenders = [(osp.relpath(path, ROOT), n)
                 for path in _python_files('tools', LAB)
                 for n in _imports(path) if n.split('.')[0] in tools | {
                     'tools'}]
    assert offenders == []


def test_nothing_edits_sys_path():
    offenders = [
        osp.relpath(path, ROOT)
        for path in _python_files('tools', LAB, LIBRARY, 'tests')
        if re.search(r'(?m)^\s*sys\.path\s*(\.|\[|=)',
                     open(path, encoding='utf-8').read())
    ]
    scripts = glob.glob(osp.join(ROOT, 'tools', '*.sh')) + [
        osp.join(ROOT, '.ci', 'run')]
    offenders += [osp.relpath(p, ROOT) for p in scripts
                  if 'PYTHONPATH' in open(p, encoding='utf-8').read()]
    assert offenders == []


def test_the_library_holds_no_program_and_imports_no_lab():
    offenders = []
    for path in _python_files(LIBRARY):
        text = open(path, encoding='utf-8').read()
        names = {n.split('.')[0] for n in _imports(path)}
        if ("__name__ == '__main__'" in text or 'argparse' in names
                or 'rankloss_lab' in names):
            offenders.append(osp.relpath(path, ROOT))
    assert offenders == []


def _packages(setup_py, argv):
    kwargs = {}
    with mock.patch('setuptools.setup', lambda **kw: kwargs.update(kw)), \
            mock.patch.object(sys, 'argv', ['setup.py'] + argv):
        runpy.run_path(setup_py)
    return kwargs['packages']


@pytest.mark.parametrize('argv', [[], ['bdist_wheel'], ['sdist'],
                                  ['editable_wheel'], ['develop']])
def test_each_distribution_installs_its_own_package(argv):
    """setup.py installs the library alone, lab/setup.py the lab alone."""
    library = _packages(osp.join(ROOT, 'setup.py'), argv)
    assert 'mmdet_rankloss' in library
    assert all(p.split('.')[0] == 'mmdet_rankloss' for p in library), library
    lab = _packages(osp.join(ROOT, 'lab', 'setup.py'), argv)
    assert 'rankloss_lab' in lab and 'rankloss_lab.datasets' in lab
    assert all(p.split('.')[0] == 'rankloss_lab' for p in lab), lab
