#!/usr/bin/env python
"""Trains a detector; MMDetection's ``tools/train.py`` with mmdet_rankloss.

Same arguments as MMDetection's script::

    python tools/train.py CONFIG [--work-dir DIR] [--amp] [--auto-scale-lr]
        [--resume [CHECKPOINT]] [--cfg-options KEY=VALUE ...]
        [--launcher {none,pytorch,slurm,mpi}]

It runs MMDetection's own script after ``import mmdet_rankloss``, which also
lets configs inherit ``mmdet_rankloss::...`` and makes ``--resume`` work with
torch >= 2.6 (see ``mmdet_rankloss/utils``). ``--amp`` needs a GPU: MMEngine's
``AmpOptimWrapper`` refuses to run on CPU.
"""
import os.path as osp
import sys

# Running from a checkout: use this checkout's package.
sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from mmdet_rankloss.utils import run_mmdet_tool  # noqa: E402

if __name__ == '__main__':
    run_mmdet_tool('train.py')
