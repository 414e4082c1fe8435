#!/usr/bin/env python
"""Trains and tests the CE / RaMBO pairs of the RaMBO paper's Table 5 on VOC:
see :mod:`rankloss_lab.reproduce_voc` (``--help``)."""
from rankloss_lab.reproduce_voc import main

if __name__ == '__main__':
    main()
