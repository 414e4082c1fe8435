"""Shared fixtures of the tool tests: the tools are scripts, not modules of
the package, so tests load them from their file; the data writers' outputs
are compared file by file."""
import filecmp
import os
import os.path as osp

import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def _same_tree(a: str, b: str) -> bool:
    """Whether the folders ``a`` and ``b`` hold the same files, byte for
    byte (every file of ``a``, at the same path in ``b``)."""
    files = sorted(
        osp.relpath(osp.join(d, f), a) for d, _, fs in os.walk(a) for f in fs)
    match, mismatch, errors = filecmp.cmpfiles(a, b, files, shallow=False)
    return bool(files) and len(match) == len(files) and not mismatch \
        and not errors


@pytest.fixture(scope='session')
def same_tree():
    """``same_tree(a, b)``: two written data sets are byte-identical."""
    return _same_tree


def _voc_dataset(root, split, test_mode=True, classes=None):
    """MMDetection's own VOCDataset over a written VOC2007 split."""
    from mmdet.datasets import VOCDataset
    return VOCDataset(
        data_root=root,
        ann_file=f'VOC2007/ImageSets/Main/{split}.txt',
        data_prefix=dict(sub_data_root='VOC2007/'),
        test_mode=test_mode,
        pipeline=[
            dict(type='LoadImageFromFile'),
            dict(type='LoadAnnotations', with_bbox=True),
            dict(type='PackDetInputs')
        ],
        **({} if classes is None else dict(metainfo=dict(classes=classes))))


@pytest.fixture(scope='session')
def voc_dataset():
    """``voc_dataset(root, split, test_mode=True, classes=None)`` ->
    MMDetection's VOCDataset reading that split (the data writers' tests)."""
    return _voc_dataset
