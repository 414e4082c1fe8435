#!/usr/bin/env python
"""Runs a DigitsVOC detection study (``experiments/studies/*.py``): see
:mod:`experiments.study` (``python tools/study.py SPEC --help``)."""
from experiments.study import main

if __name__ == '__main__':
    main()
