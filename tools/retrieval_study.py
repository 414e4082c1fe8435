#!/usr/bin/env python
"""Compares retrieval losses (a spec of ``experiments/studies/``): see
:mod:`experiments.retrieval_study` (``--help``)."""
import os.path as osp
import sys

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
# experiments/ (the code the tools share) is not installed: it is
# imported from this checkout
sys.path.insert(0, ROOT)
from experiments.retrieval_study import main

if __name__ == '__main__':
    main()
