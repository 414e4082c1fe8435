#!/usr/bin/env python
"""Tests (and evaluates) a detector; MMDetection's ``tools/test.py`` with
mmdet_rankloss.

    python tools/test.py CONFIG CHECKPOINT [--work-dir DIR] [--out FILE.pkl]
        [--show] [--show-dir DIR] [--cfg-options KEY=VALUE ...] [--tta]
        [--launcher {none,pytorch,slurm,mpi}]

The metric is the config's ``test_evaluator``, logged under ``--work-dir``.
"""
from mmdet_rankloss import patches
from rankloss_lab.mmdet_tools import run_mmdet_tool

if __name__ == '__main__':
    # Every patch of mmdet_rankloss.patches, atomic checkpoint writes
    # included (docs/architecture.md, "Changes to MMEngine (patches)").
    patches.enable_all()
    run_mmdet_tool('test.py')
