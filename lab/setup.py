"""Installs ``rankloss_lab``, the lab beside the ``mmdet_rankloss`` library.

It holds the synthetic benchmarks (toy VOC, DigitsVOC, glyphs, digit scenes,
the digit retrieval sets), the study and report machinery, and the code of
the repository's command-line tools (``tools/``). ``tools/install.sh``
installs it editable (``pip install -e lab``): the lab reads the
repository's configs and records from the checkout it lives in.
"""
import os.path as osp
from setuptools import find_packages, setup

HERE = osp.dirname(osp.abspath(__file__))

setup(
    name='rankloss_lab',
    version='0.0.0',
    description='Benchmarks, studies and tools beside mmdet_rankloss',
    packages=find_packages(HERE, include=['rankloss_lab', 'rankloss_lab.*']),
    python_requires='>=3.10',
    install_requires=['mmdet_rankloss'],
    license='MIT',
    zip_safe=False,
)
