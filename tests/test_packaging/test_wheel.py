"""The built wheel carries every config, and an installed copy loads them all.

The wheel is built (``pip wheel --no-deps --no-build-isolation``) from a copy
of the files the build reads, not from the checkout itself: an in-place build
writes ``build/`` and ``*.egg-info`` into the checkout, and setuptools keeps
files of earlier builds in ``build/lib``, which would hide a config missing
from the package data. It is installed with ``pip install --target`` outside
the checkout and imported from there, in a subprocess whose working
directory and ``PYTHONPATH`` leave the checkout (and its editable install)
out of the way.
"""
import json
import os
import os.path as osp
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile

import pytest

from mmdet_rankloss.utils.config import config_files

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIGS = osp.join(ROOT, 'configs')
# What setup.py reads; `mmdet_rankloss/.mim` links into `configs/` and to
# `model-index.yml`, so the copy keeps links.
BUILD_INPUTS = ('setup.py', 'MANIFEST.in', 'README.md', 'model-index.yml',
                'configs', 'mmdet_rankloss')
PIP = (sys.executable, '-m', 'pip', '--disable-pip-version-check',
       '--no-input')


def run(cmd, **kwargs):
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=300, **kwargs)
    assert proc.returncode == 0, (
        f'{" ".join(map(str, cmd))} failed:\n{proc.stdout}\n{proc.stderr}')
    return proc


@pytest.fixture(scope='module')
def source(tmp_path_factory):
    """A copy of what the build reads, links kept."""
    src = tmp_path_factory.mktemp('source') / 'src'
    ignore = shutil.ignore_patterns('__pycache__', '*.pyc', '*.egg-info')
    for name in BUILD_INPUTS:
        path = osp.join(ROOT, name)
        if osp.isdir(path):
            shutil.copytree(path, src / name, symlinks=True, ignore=ignore)
        else:
            os.makedirs(src, exist_ok=True)
            shutil.copy2(path, src / name)
    return src


@pytest.fixture(scope='module')
def installed(source, tmp_path_factory):
    """Builds the wheel and installs it; returns (wheel path, site dir)."""
    tmp = tmp_path_factory.mktemp('wheel')
    dist = tmp / 'dist'
    run([
        *PIP, 'wheel', '-q', '--no-deps', '--no-build-isolation',
        '--no-index', '-w',
        str(dist), str(source)
    ], cwd=str(tmp))
    wheels = list(dist.glob('mmdet_rankloss-*.whl'))
    assert len(wheels) == 1, wheels
    site = tmp / 'site'
    run([
        *PIP, 'install', '-q', '--no-deps', '--no-index', '--target',
        str(site),
        str(wheels[0])
    ], cwd=str(tmp))
    return wheels[0], site


@pytest.mark.slow
def test_wheel_lists_every_config(installed):
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        f'mmdet_rankloss/.mim/configs/{rel}'
        for rel in config_files(CONFIGS)
    }
    expected.add('mmdet_rankloss/.mim/model-index.yml')
    assert not expected - names, sorted(expected - names)


@pytest.mark.slow
def test_sdist_carries_every_config(source, tmp_path):
    """The sdist has the configs in the package data (a wheel built from it
    is complete) and under ``configs/``, plus ``model-index.yml``."""
    run([sys.executable, 'setup.py', '-q', 'sdist', '-d',
         str(tmp_path)],
        cwd=str(source))
    sdists = list(tmp_path.glob('mmdet_rankloss-*.tar.gz'))
    assert len(sdists) == 1, sdists
    with tarfile.open(sdists[0]) as tar:
        members = {m.name.partition('/')[2]: m for m in tar.getmembers()}
    expected = {'model-index.yml', 'mmdet_rankloss/.mim/model-index.yml'}
    for rel in config_files(CONFIGS):
        expected |= {f'configs/{rel}', f'mmdet_rankloss/.mim/configs/{rel}'}
    assert not expected - set(members), sorted(expected - set(members))
    assert all(members[name].isfile() for name in expected)


LOAD_ALL = textwrap.dedent('''
    import json, os, os.path as osp, sys

    site, configs = sys.argv[1], json.loads(sys.argv[2])
    import mmdet_rankloss
    from mmengine.config import Config

    def inside(path):
        return osp.realpath(path).startswith(osp.realpath(site) + os.sep)

    assert inside(mmdet_rankloss.__file__), mmdet_rankloss.__file__
    results = {}
    for rel in configs:
        # What a downstream config does; MMEngine resolves `package::path`
        # in `_base_` (Config.fromfile itself takes only file names).
        child = osp.join(os.getcwd(), 'child.py')
        with open(child, 'w') as f:
            f.write(f"_base_ = 'mmdet_rankloss::{rel}'\\n")
        try:
            resolved, scope = Config._get_cfg_path(
                f'mmdet_rankloss::{rel}', child)
            assert inside(resolved) and scope == 'mmdet_rankloss', resolved
            cfg = Config.fromfile(child)
            assert len(cfg.keys()) > 0
            results[rel] = 'ok'
        except Exception as e:  # report every failure at once
            results[rel] = repr(e)
    print(json.dumps(dict(file=mmdet_rankloss.__file__, results=results)))
''')


@pytest.mark.slow
def test_installed_wheel_loads_every_config(installed, tmp_path):
    _, site = installed
    configs = config_files(CONFIGS, exts=('.py', ))
    # Every family, so that a lost directory cannot go unnoticed.
    for family in ('rambo/', 'rankers/', 'quickstart/', 'retrieval/_base_/',
                   'retrieval/peers/'):
        assert any(rel.startswith(family) for rel in configs), family
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONNOUSERSITE='1')
    proc = run([sys.executable, '-c', LOAD_ALL,
                str(site), json.dumps(configs)],
               cwd=str(tmp_path),
               env=env)
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert osp.realpath(report['file']).startswith(osp.realpath(site))
    failed = {k: v for k, v in report['results'].items() if v != 'ok'}
    assert not failed, failed
    assert sorted(report['results']) == configs
