#!/usr/bin/env python
"""Trains a detector; MMDetection's ``tools/train.py`` with mmdet_rankloss.

    python tools/train.py CONFIG [--work-dir DIR] [--resume] ...

MMDetection's script after ``import mmdet_rankloss`` and
``mmdet_rankloss.patches.enable_all()`` (``mmdet_rankloss::`` bases,
``--resume`` with torch >= 2.6, checkpoints written atomically).
``--amp`` needs a GPU (``AmpOptimWrapper`` refuses CPU).
"""
from mmdet_rankloss import patches
from rankloss_lab.mmdet_tools import run_mmdet_tool

if __name__ == '__main__':
    patches.enable_all()
    run_mmdet_tool('train.py')
