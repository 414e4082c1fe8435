#!/usr/bin/env python
"""Compares retrieval losses (a spec of ``experiments/studies/``): see
:mod:`experiments.retrieval_study` (``--help``)."""
from experiments.retrieval_study import main

if __name__ == '__main__':
    main()
