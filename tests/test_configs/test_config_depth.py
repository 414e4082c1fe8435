"""Every config of ``configs/`` inherits at most three of our files deep.

MMDetection's rule for readable configs: a config, the config it changes,
and the bases under that; a newcomer follows a chain of three files at most.
``mmdet::`` bases are MMDetection's and end a chain here.
"""
import glob
import os.path as osp

import pytest

CONFIG_DIR = osp.join(
    osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__)))), 'configs')
ALL_FILES = sorted(
    glob.glob(osp.join(CONFIG_DIR, '**', '*.py'), recursive=True))


@pytest.fixture(scope='module')
def depth(config_bases):

    def files_on_longest_chain(path):
        return 1 + max((files_on_longest_chain(b) for b in config_bases(path)),
                       default=0)

    return files_on_longest_chain


def test_every_family_is_covered():
    families = {osp.relpath(p, CONFIG_DIR).split(osp.sep)[0]
                for p in ALL_FILES}
    assert families >= {'dense', 'digitsvoc', 'quickstart', 'rambo',
                        'rankers', 'retrieval'}


@pytest.mark.parametrize('path', ALL_FILES,
                         ids=lambda p: osp.relpath(p, CONFIG_DIR))
def test_inheritance_is_at_most_three_levels_deep(path, depth, config_bases):
    for base in config_bases(path):
        assert osp.isfile(base), base
    assert depth(path) <= 3, [osp.relpath(b, CONFIG_DIR)
                              for b in config_bases(path)]


def test_the_depth_counts_chains(depth):
    """The check can fail: the longest chain in the tree is three files."""
    assert max(depth(p) for p in ALL_FILES) == 3
