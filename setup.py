"""Installs the mmdet_rankloss plugin (``pip install -e .``).

The heavy dependencies (torch, mmcv with compiled ops, mmdet) are installed
by ``tools/install.sh`` because mmcv 2.1.0 has to be built from its sdist
against the installed torch; listing them here would let pip pull a CUDA
torch or an op-less mmcv.
"""
from setuptools import find_packages, setup

setup(
    name='mmdet_rankloss',
    version='0.1.0',
    description='Rank-based losses (RaMBO, FastAP, SRT, SoDeep, AUC) for '
    'MMDetection 3.x',
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    packages=find_packages(exclude=('tests', 'tests.*', 'configs', 'tools')),
    # MMEngine resolves `_base_ = 'mmdet_rankloss::...'` through
    # mmdet_rankloss/.mim (model-index.yml and configs/, a link to the
    # repository's configs/ that the build follows and copies).
    package_data={
        'mmdet_rankloss': [
            '.mim/model-index.yml', '.mim/configs/*/*.py',
            '.mim/configs/*/*.yml', '.mim/configs/*/_base_/*.py'
        ]
    },
    python_requires='>=3.8',
    install_requires=['numpy'],
    license='MIT',
    zip_safe=False,
)
