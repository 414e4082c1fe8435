#!/usr/bin/env python
"""Tests a detector: MMDetection's ``tools/test.py`` after
``mmdet_rankloss.patches.enable_all()`` (docs/architecture.md).

    python tools/test.py CONFIG CHECKPOINT [--out FILE.pkl] ...

The metric is the config's ``test_evaluator``, logged under ``--work-dir``.
"""
from mmdet_rankloss import patches
from rankloss_lab.mmdet_tools import run_mmdet_tool

if __name__ == '__main__':
    patches.enable_all()
    run_mmdet_tool('test.py')
