#!/usr/bin/env python
"""Trains a detector; MMDetection's ``tools/train.py`` with mmdet_rankloss.

Same arguments as MMDetection's script::

    python tools/train.py CONFIG [--work-dir DIR] [--amp] [--auto-scale-lr]
        [--resume [CHECKPOINT]] [--cfg-options KEY=VALUE ...]
        [--launcher {none,pytorch,slurm,mpi}]

It runs MMDetection's own script after ``import mmdet_rankloss`` and
``mmdet_rankloss.patches.enable_all()``: configs may inherit
``mmdet_rankloss::...``, ``--resume`` works with torch >= 2.6, and a job
killed while writing a checkpoint leaves the previous one intact (see
``mmdet_rankloss/patches.py``). ``--amp`` needs a GPU: MMEngine's
``AmpOptimWrapper`` refuses to run on CPU.
"""
from mmdet_rankloss import patches
from rankloss_lab.mmdet_tools import run_mmdet_tool

if __name__ == '__main__':
    # Every patch of mmdet_rankloss.patches, atomic checkpoint writes
    # included (docs/architecture.md, "Changes to MMEngine (patches)").
    patches.enable_all()
    run_mmdet_tool('train.py')
