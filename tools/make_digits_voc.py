"""Moved to tools/dataset_converters/make_digits_voc.py; this path stays
because the frozen confirmation study's data command names it."""
import os.path as osp
import runpy

runpy.run_path(osp.join(osp.dirname(osp.abspath(__file__)),
                        'dataset_converters', 'make_digits_voc.py'),
               run_name='__main__')
