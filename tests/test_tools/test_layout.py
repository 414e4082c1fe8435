"""The layout of tools/ and experiments/ (docs/architecture.md): no tool
imports another tool; the code the tools share is in ``experiments``, which
no install puts in site-packages: a tool imports it from its checkout."""
import ast
import glob
import os.path as osp
import re
import runpy
import subprocess
import sys
from unittest import mock

import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
# the one sys.path change a tool may make: its checkout first
CHECKOUT_FIRST = 'sys.path.insert(0, ROOT)'


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
                 for path in _python_files('tools', 'experiments')
                 for n in _imports(path) if n.split('.')[0] in tools | {
                     'tools'}]
    assert offenders == []


def test_only_tools_change_sys_path_and_only_to_put_their_checkout_first():
    offenders = []
    for path in _python_files('tools', 'experiments'):
        text = open(path, encoding='utf-8').read()
        changes = [c.strip() for c in re.findall(
            r'(?m)^\s*sys\.path\b.*', text)]
        if not changes:
            continue
        if path.startswith(osp.join(ROOT, 'experiments')) or changes != [
                CHECKOUT_FIRST]:
            offenders.append((osp.relpath(path, ROOT), changes))
            continue
        # ROOT is the checkout, set before experiments is imported
        scope = {'__file__': path}
        exec(re.search(r'^ROOT = .*$', text, re.M).group(0),
             {'osp': osp, '__file__': path}, scope)
        first = re.search(r'^(from|import) experiments\b', text, re.M)
        if scope['ROOT'] != ROOT or text.index(CHECKOUT_FIRST) > first.start():
            offenders.append((osp.relpath(path, ROOT), 'ROOT or order'))
    assert offenders == []


@pytest.mark.parametrize('path', [
    p for p in _python_files('tools') if any(
        n.split('.')[0] == 'experiments' for n in _imports(p))
], ids=lambda p: osp.relpath(p, ROOT))
def test_every_tool_that_imports_experiments_puts_its_checkout_first(path):
    assert CHECKOUT_FIRST in open(path, encoding='utf-8').read()


@pytest.mark.parametrize('argv', [[], ['bdist_wheel'], ['sdist'],
                                  ['editable_wheel'], ['develop']])
def test_no_install_puts_experiments_in_site_packages(argv):
    """setup.py's packages, whatever the command: the library alone."""
    kwargs = {}
    with mock.patch('setuptools.setup', lambda **kw: kwargs.update(kw)), \
            mock.patch.object(sys, 'argv', ['setup.py'] + argv):
        runpy.run_path(osp.join(ROOT, 'setup.py'))
    packages = kwargs['packages']
    assert 'mmdet_rankloss' in packages
    assert all(p.split('.')[0] == 'mmdet_rankloss' for p in packages), \
        packages


@pytest.mark.slow
def test_a_tool_runs_without_experiments_installed():
    """From another directory, with every editable-install finder removed:
    the tool finds experiments/ in its own checkout."""
    tool = osp.join(ROOT, 'tools', 'analysis_tools', 'pooled_claim.py')
    code = (
        'import runpy, sys\n'
        'sys.meta_path[:] = [f for f in sys.meta_path\n'
        '                    if "editable" not in repr(f).lower()]\n'
        'sys.path[:] = [p for p in sys.path if p not in ("", ".")]\n'
        f'sys.argv = [{tool!r}, "--help"]\n'
        f'runpy.run_path({tool!r}, run_name="__main__")\n')
    out = subprocess.run([sys.executable, '-c', code], cwd='/',
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert 'usage' in out.stdout
