"""The torch-only parts' import graph holds no MMDetection, mmcv or MMEngine.

Read from the source (no import): every module that ``import
mmdet_rankloss.losses`` (``.ops``, ``.networks``, ``.evaluation``) runs, following the
module-level imports, those inside ``if``/``try``/``with`` too, except the
``if HAS_MMDET:`` branches (:mod:`mmdet_rankloss.optional_mmdet` decides
that once). The third-party packages it reaches are exactly setup.py's
``install_requires``. The subprocess run without MMDetection is
``test_plain_pytorch.py``.
"""
import ast
import glob
import os.path as osp
import re
import runpy
import sys
from unittest import mock

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
PACKAGE = 'mmdet_rankloss'
OPENMMLAB = {'mmdet', 'mmcv', 'mmengine'}
ENTRIES = [f'{PACKAGE}.losses', f'{PACKAGE}.ops', f'{PACKAGE}.networks',
           f'{PACKAGE}.evaluation']
#: the modules those may run: the package root runs first
ALLOWED = re.compile(rf'^{PACKAGE}(\.version|\.optional_mmdet'
                     r'|\.(losses|ops|networks|evaluation)(\..+)?)?$')
#: imports of MMEngine / MMDetection inside functions of these packages:
#: the aLRP self-balance hook's look-up of the warm-up schedulers, which
#: only MMEngine's runner calls
FUNCTION_IMPORTS = {(f'{PACKAGE}.losses.alrp_loss', '_warmup_schedulers')}


def module_file(name):
    """The source file of a module of the package, or None."""
    base = osp.join(ROOT, *name.split('.'))
    for path in (base + '.py', osp.join(base, '__init__.py')):
        if osp.isfile(path):
            return path
    return None


def parse(name):
    with open(module_file(name), encoding='utf-8') as f:
        return ast.parse(f.read())


def absolute(name, node):
    """The module an ImportFrom node of module ``name`` names."""
    if not node.level:
        return node.module
    package = name if module_file(name).endswith('__init__.py') else \
        name.rpartition('.')[0]
    parts = package.split('.')
    base = parts[:len(parts) - node.level + 1]
    return '.'.join(base + ([node.module] if node.module else []))


def imported(name, node):
    """Modules an import node loads (``from . import x`` loads ``.x``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    module = absolute(name, node)
    subs = [f'{module}.{alias.name}' for alias in node.names
            if module_file(f'{module}.{alias.name}')]
    return [module] + subs


def run_time_imports(name, guarded=True):
    """Modules ``name`` imports when it runs: module level, into
    ``if``/``try``/``with`` blocks, not into functions or classes; with
    ``guarded``, not into the body of ``if HAS_MMDET:``."""
    out = []

    def visit(body):
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                out.extend(imported(name, node))
            elif isinstance(node, ast.If):
                if not (guarded and 'HAS_MMDET' in ast.unparse(node.test)):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.With):
                visit(node.body)

    visit(parse(name).body)
    return out


def graph(guarded=True):
    """(modules of the package run, other top-level packages imported)."""
    seen, outside, todo = set(), set(), list(ENTRIES)
    while todo:
        name = todo.pop()
        parts = name.split('.')
        chain = ['.'.join(parts[:i]) for i in range(1, len(parts) + 1)]
        for module in chain:  # a submodule runs its packages first
            if module in seen or not module_file(module):
                continue
            seen.add(module)
            for dep in run_time_imports(module, guarded):
                if dep.split('.')[0] == PACKAGE:
                    todo.append(dep)
                else:
                    outside.add(dep.split('.')[0])
    return seen, outside


def test_the_losses_run_only_their_own_modules():
    seen, _ = graph()
    assert {f'{PACKAGE}.losses.ap_loss', f'{PACKAGE}.ops.distributed',
            f'{PACKAGE}.networks.sorters', f'{PACKAGE}.evaluation.lrp',
            f'{PACKAGE}.optional_mmdet'} <= seen
    assert f'{PACKAGE}.evaluation.lrp_metric' not in seen
    assert sorted(m for m in seen if not ALLOWED.match(m)) == []


def test_the_losses_import_no_openmmlab_package():
    _, outside = graph()
    assert not outside & OPENMMLAB, sorted(outside & OPENMMLAB)


def test_only_the_guard_keeps_mmdetection_out():
    """Read through ``if HAS_MMDET:``, the same graph reaches MMDetection:
    the check above looks where MMDetection is imported."""
    seen, outside = graph(guarded=False)
    assert OPENMMLAB <= outside
    assert f'{PACKAGE}.models' in seen


def test_install_requires_is_what_the_losses_import():
    _, outside = graph()
    third_party = outside - set(sys.stdlib_module_names) - {PACKAGE}
    kwargs = {}
    with mock.patch('setuptools.setup', lambda **kw: kwargs.update(kw)), \
            mock.patch.object(sys, 'argv', ['setup.py']):
        runpy.run_path(osp.join(ROOT, 'setup.py'))
    required = {re.split(r'[<>=!~ ;\[]', r)[0]
                for r in kwargs['install_requires']}
    assert required == third_party == {'numpy', 'torch'}
    extra = {re.split(r'[<>=!~ ;\[]', r)[0]
             for r in kwargs['extras_require']['mmdet']}
    assert {'mmdet', 'mmengine'} <= extra


def test_no_loss_imports_openmmlab_inside_a_function():
    found = set()
    for name in sorted(graph()[0]):
        if name == f'{PACKAGE}.optional_mmdet':
            continue  # the one place that decides
        for func in ast.walk(parse(name)):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                        m.split('.')[0] in OPENMMLAB
                        for m in imported(name, node)):
                    found.add((name, func.name))
    assert found == FUNCTION_IMPORTS


def _all_modules():
    return sorted(
        osp.relpath(path, ROOT)[:-3].replace(osp.sep, '.').removesuffix(
            '.__init__')
        for path in glob.glob(osp.join(ROOT, PACKAGE, '**', '*.py'),
                              recursive=True))


def _from_imports(name):
    """(module imported from, the names) of every ``from`` import of
    ``name``, at any depth."""
    for node in ast.walk(parse(name)):
        if isinstance(node, ast.ImportFrom):
            yield absolute(name, node), [a.name for a in node.names]


def test_no_private_name_is_imported_across_modules():
    found = [(name, module, alias) for name in _all_modules()
             for module, aliases in _from_imports(name)
             for alias in aliases
             if (module or '').split('.')[0] == PACKAGE
             and alias.startswith('_') and not alias.startswith('__')]
    assert found == []


def test_no_import_cycle_between_subpackages():
    """Between the package's parts (``losses``, ``models``, ``patches``,
    ...): no part imports one that imports it back, at any depth of
    import (functions included), and no part imports the package root."""
    def part(module):
        return '.'.join(module.split('.')[:2])

    edges, root_imports = {}, []
    for name in _all_modules():
        if name == PACKAGE:
            continue
        for node in ast.walk(parse(name)):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for module in imported(name, node):
                if module == PACKAGE:
                    root_imports.append(name)
                elif module.split('.')[0] == PACKAGE and \
                        part(module) != part(name):
                    edges.setdefault(part(name), set()).add(part(module))
    assert root_imports == []

    def reaches(start, goal, seen=()):
        return any(nxt == goal or (nxt not in seen and reaches(
            nxt, goal, seen + (nxt, ))) for nxt in edges.get(start, ()))

    assert [p for p in edges if reaches(p, p)] == []
