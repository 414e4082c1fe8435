"""Installs the mmdet_rankloss plugin.

``pip install .`` (or a built wheel) installs the losses, which need torch
and numpy only. ``pip install '.[mmdet]'`` adds MMDetection and MMEngine, for
an environment that has (or gets) mmcv with compiled ops;
``tools/install.sh`` builds such an environment and installs this package
editable, without dependencies. See ``docs/get_started.md``.
"""
import os
import os.path as osp

from setuptools import find_packages, setup

HERE = osp.dirname(osp.abspath(__file__))
PACKAGE = 'mmdet_rankloss'
# The library only: the lab (`lab/`, its own package) is in no install of it.
PACKAGES = [PACKAGE, PACKAGE + '.*']


def version() -> str:
    """The one version, read from mmdet_rankloss/version.py."""
    scope = {}
    with open(osp.join(HERE, PACKAGE, 'version.py'), encoding='utf-8') as f:
        exec(f.read(), scope)
    return scope['__version__']


def mim_files():
    """Every file MMEngine reads for ``mmdet_rankloss::<path>``.

    ``mmdet_rankloss/.mim`` holds ``model-index.yml`` and ``configs`` (links to
    the repository's ``model-index.yml`` and ``configs/``; the build follows
    them and copies the files). All ``.py`` and ``.yml`` files under
    ``configs/`` are shipped, found by a recursive walk so that a new config
    directory is never left out of the wheel.
    """
    mim = osp.join(HERE, PACKAGE, '.mim')
    files = ['.mim/model-index.yml']
    for dirpath, dirnames, filenames in os.walk(
            osp.join(mim, 'configs'), followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d != '__pycache__')
        rel = osp.relpath(dirpath, osp.join(HERE, PACKAGE))
        files += [
            osp.join(rel, name).replace(os.sep, '/')
            for name in sorted(filenames) if name.endswith(('.py', '.yml'))
        ]
    if len(files) == 1:
        raise RuntimeError(
            f'no configs under {mim}/configs: it should link to (in an sdist: '
            'hold a copy of) the repository\'s configs/')
    return files


setup(
    name=PACKAGE,
    version=version(),
    description='Rank-based losses (RaMBO, Rank & Sort, aLRP, AP-Loss, '
    'FastAP, SRT, SoDeep, AUC) for MMDetection 3.x',
    long_description=open(
        osp.join(HERE, 'README.md'), encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    packages=find_packages(include=PACKAGES),
    # MMEngine resolves `_base_ = 'mmdet_rankloss::...'` through
    # mmdet_rankloss/.mim (see mmdet_rankloss/utils/config.py).
    package_data={PACKAGE: mim_files()},
    python_requires='>=3.10',
    # The losses (losses/, ops/, networks/) need torch and numpy only: the
    # plain install. Torch 2.0 to 2.13 is tested (2.13.0 CPU); pip keeps one
    # that is installed, so install the CPU or CUDA build you want first.
    install_requires=['numpy', 'torch>=2.0'],
    extras_require={
        # The MMDetection plugin: components, configs, tools. The versions
        # tested are mmdet 3.3.0 and mmengine 0.10.7. Left out, as in
        # OpenMMLab's own projects: mmcv (mmdet 3.3 needs mmcv >= 2.0, < 2.2
        # with compiled ops, and PyPI has no mmcv wheel for recent torch,
        # only the 2.1.0 sdist; tools/install.sh builds it against the
        # installed torch, or install it with `mim install "mmcv>=2.0.0,
        # <2.2.0"`). Listed here, pip would try to build an op-less mmcv or
        # pull another torch.
        'mmdet': [
            'mmdet>=3.3.0,<3.4',
            'mmengine>=0.10.7,<0.11',
            # The digits data generators use scikit-learn's embedded digits.
            'scikit-learn',
            'scipy',
            # MMEngine 0.10.7 finds packaged configs through pkg_resources,
            # removed in setuptools 81.
            'setuptools<81',
        ],
        'tests': [
            'pytest',
            'pycocotools',
            # tests/test_packaging/test_lint.py (ruff.toml, .isort.cfg)
            'ruff',
            'isort',
            # Reference values in tests; 3.x requires torch >= 2.14, which
            # cannot build mmcv 2.1.0.
            'pytorch-metric-learning<3',
            'faiss-cpu',
        ],
    },
    license='MIT',
    zip_safe=False,
)
