#!/usr/bin/env python
"""Runs a DigitsVOC detection study (``lab/rankloss_lab/studies/*.py``): see
:mod:`rankloss_lab.study` (``python tools/study.py SPEC --help``)."""
from rankloss_lab.study import main

if __name__ == '__main__':
    main()
