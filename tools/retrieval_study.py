#!/usr/bin/env python
"""Compares retrieval losses (a spec of ``lab/rankloss_lab/studies/``): see
:mod:`rankloss_lab.retrieval_study` (``--help``)."""
from rankloss_lab.retrieval_study import main

if __name__ == '__main__':
    main()
