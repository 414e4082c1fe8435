#!/usr/bin/env python
"""Runs a DigitsVOC detection study (``experiments/studies/*.py``): see
:mod:`experiments.study` (``python tools/study.py SPEC --help``)."""
import os.path as osp
import sys

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
# experiments/ (the code the tools share) is not installed: it is
# imported from this checkout
sys.path.insert(0, ROOT)
from experiments.study import main

if __name__ == '__main__':
    main()
