"""The layout of tools/ and experiments/ (docs/architecture.md): no tool
changes ``sys.path`` or imports another tool, the shared code is in
``experiments``, which the editable install of the checkout provides."""
import ast
import glob
import os.path as osp
import subprocess
import sys

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def _python_files(*folders):
    return sorted(p for folder in folders for p in glob.glob(
        osp.join(ROOT, folder, '**', '*.py'), recursive=True))


def test_no_sys_path_changes():
    offenders = [osp.relpath(p, ROOT)
                 for p in _python_files('tools', 'experiments')
                 if 'sys.path' in open(p, encoding='utf-8').read()]
    assert offenders == []


def test_no_tool_imports_another():
    tools = {osp.splitext(osp.basename(p))[0] for p in _python_files('tools')}
    offenders = []
    for path in _python_files('tools', 'experiments'):
        tree = ast.parse(open(path, encoding='utf-8').read())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(
                node, ast.Import) else [node.module or ''] if isinstance(
                    node, ast.ImportFrom) and not node.level else [])
            offenders += [(osp.relpath(path, ROOT), n) for n in names
                          if n.split('.')[0] in tools | {'tools'}]
    assert offenders == []


def test_experiments_come_from_the_checkout():
    """Importable from any directory (the editable install), from this
    checkout."""
    out = subprocess.run(
        [sys.executable, '-c', 'import experiments; print(experiments.'
         '__file__)'], cwd='/', capture_output=True, text=True, check=True)
    assert out.stdout.strip() == osp.join(ROOT, 'experiments', '__init__.py')

