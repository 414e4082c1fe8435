#!/usr/bin/env python
"""Trains and tests the CE / RaMBO pairs of the RaMBO paper's Table 5 on VOC:
see :mod:`experiments.reproduce_voc` (``--help``)."""
import os.path as osp
import sys

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
# experiments/ (the code the tools share) is not installed: it is
# imported from this checkout
sys.path.insert(0, ROOT)
from experiments.reproduce_voc import main

if __name__ == '__main__':
    main()
