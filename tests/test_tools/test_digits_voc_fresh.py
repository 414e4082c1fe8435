"""DigitsVOC's fresh test split: the default output is unchanged byte for
byte, the fresh split writes only its own files, draws only digit images
that no existing split draws, and is deterministic."""
import hashlib
import os.path as osp
import subprocess
import sys

import numpy as np
import pytest

from helpers import read_tree  # tests/ on sys.path
from rankloss_lab.datasets import digits_voc as D

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
SMALL = (('train', 6), ('val', 3), ('test', 4))
# sha256 over (relative path, bytes) of every file that make_digits_voc
# wrote for SMALL, seed 0, computed with the code before the fresh split
# existed: the default output must stay byte for byte the same
SMALL_DIGEST = \
    '0fc8c01783af3236511e6e1bb9cde78784101edb548bda88bfc52bab34b63888'


def _digest(files):
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode())
        h.update(files[rel])
    return h.hexdigest()


def test_default_output_is_unchanged(tmp_path):
    D.make_digits_voc(str(tmp_path / 'a'), splits=SMALL, seed=0)
    assert _digest(read_tree(str(tmp_path / 'a'))) == SMALL_DIGEST


def test_fresh_split_writes_only_its_own_files(tmp_path):
    root = str(tmp_path / 'VOCdevkit')
    D.make_digits_voc(root, splits=SMALL, seed=0)
    before = read_tree(root)
    stats = D.make_fresh_test_split(root, 'confirm', 5, fresh_seed=1,
                                    splits=SMALL)
    after = read_tree(root)
    # every existing file byte for byte the same, only confirm files added
    assert {k: after[k] for k in before} == before
    new = sorted(set(after) - set(before))
    assert all(osp.basename(p).startswith('confirm_')
               or p.endswith('_confirm.txt') or p.endswith('/confirm.txt')
               for p in new)
    main = osp.join(root, 'VOC2007', 'ImageSets', 'Main')
    ids = open(osp.join(main, 'confirm.txt')).read().split()
    assert ids == [f'confirm_{i:05d}' for i in range(5)]
    assert stats['images'] == 5 and stats['objects'] == sum(stats['counts'])
    # deterministic; another synthesis seed gives other images
    again = str(tmp_path / 'again')
    D.make_digits_voc(again, splits=SMALL, seed=0)
    D.make_fresh_test_split(again, 'confirm', 5, fresh_seed=1, splits=SMALL)
    assert read_tree(again) == after
    other = str(tmp_path / 'other')
    D.make_fresh_test_split(other, 'confirm', 5, fresh_seed=2, splits=SMALL)
    jpg = 'VOC2007/JPEGImages/confirm_00000.jpg'
    assert read_tree(other)[jpg] != after[jpg]


@pytest.mark.slow
def test_fresh_split_draws_only_unused_digit_images(tmp_path, monkeypatch):
    images, target = D._load_digits()
    used = set(D.used_digit_images().tolist())  # the default splits
    # the replay draws inside each split's own pool
    pools = D._digit_pool_indices(0)
    assert used <= {int(i) for per in pools.values() for v in per.values()
                    for i in v}
    # the numbers docs/evidence.md gives: 342 free, 7 to 78 per class
    free = np.array(sorted(set(range(len(images))) - used))
    assert len(used) == 1455 and len(free) == 342
    assert np.bincount(target[free], minlength=10).tolist() == [
        7, 14, 15, 16, 29, 42, 43, 45, 53, 78]
    # record what the fresh split draws: none of it is used elsewhere
    drawn = []
    real = D._write_split

    def recording(year_root, split, count, rng, size, pools, probs):
        if split != 'confirm':  # the replay of the existing splits
            return real(year_root, split, count, rng, size, pools, probs)
        index = {images[i].tobytes(): int(i) for i in free}
        wrapped = {k: _Recorder(p, index, drawn) for k, p in pools.items()}
        return real(None, split, count, rng, size, wrapped, probs)

    monkeypatch.setattr(D, '_write_split', recording)
    monkeypatch.setattr(D, 'write_image_sets', lambda *a: None)
    D.make_fresh_test_split(str(tmp_path), 'confirm', 40)
    # -1: a drawn digit image that is not one of the free ones
    assert len(drawn) > 100 and -1 not in drawn
    assert not set(drawn) & used


class _Recorder:
    def __init__(self, pool, index, drawn):
        self.pool, self.index, self.drawn = pool, index, drawn

    def __len__(self):
        return len(self.pool)

    def __getitem__(self, i):
        digit = self.pool[i]
        self.drawn.append(self.index.get(digit.tobytes(), -1))
        return digit


@pytest.mark.parametrize('name', ['test', 'train', 'val', 'trainval',
                                  'a b', ''])
def test_fresh_split_needs_a_new_name(tmp_path, name):
    with pytest.raises(ValueError, match='new name'):
        D.make_fresh_test_split(str(tmp_path), name, 2, splits=SMALL)


@pytest.mark.slow
def test_cli_writes_the_fresh_split(tmp_path):
    root = str(tmp_path / 'VOCdevkit')
    tool = osp.join(ROOT, 'tools', 'dataset_converters', 'make_digits_voc.py')
    sizes = ['--train', '6', '--val', '3', '--test', '4']
    subprocess.run([sys.executable, tool, root] + sizes, check=True,
                   capture_output=True)
    before = read_tree(root)
    out = subprocess.run(
        [sys.executable, tool, root] + sizes +
        ['--fresh-test', 'confirm', '--fresh-test-images', '3'],
        check=True, capture_output=True, text=True).stdout
    assert 'confirm: 3 images' in out and 'no other split draws' in out
    after = read_tree(root)
    assert {k: after[k] for k in before} == before
    assert osp.isfile(osp.join(root, 'VOC2007', 'ImageSets', 'Main',
                               'confirm.txt'))
