"""P x K and super-class-pair samplers: structure, seeds, ranks, coverage."""
from collections import Counter

import numpy as np
import pytest

from mmdet.registry import DATA_SAMPLERS
from mmdet_rankloss.samplers import PKSampler, SuperClassPairSampler
from mmdet_rankloss.samplers import retrieval as sampler_module


class LabelDataset:
    """Labels only, like RetrievalDataset.get_labels / get_super_labels."""

    def __init__(self, labels, super_labels=None):
        self.labels = np.asarray(labels)
        self.super_labels = None if super_labels is None else np.asarray(
            super_labels)

    def __len__(self):
        return len(self.labels)

    def get_labels(self):
        return self.labels

    def get_super_labels(self):
        return self.super_labels


class InfoDataset:
    """Only get_data_info, like a plain MMEngine dataset."""

    def __init__(self, labels):
        self.labels = labels

    def __len__(self):
        return len(self.labels)

    def get_data_info(self, idx):
        return dict(gt_label=self.labels[idx])


def batches_of(sampler):
    indices = list(sampler)
    assert len(indices) == len(sampler)
    size = sampler.batch_size
    return [indices[i:i + size] for i in range(0, len(indices), size)]


def fake_world(monkeypatch, rank, world_size):
    monkeypatch.setattr(sampler_module, 'get_dist_info',
                        lambda: (rank, world_size))


def test_pk_structure_and_coverage():
    labels = np.repeat(np.arange(10), 8)  # 10 classes x 8 images
    sampler = PKSampler(LabelDataset(labels), batch_size=20, num_per_class=4,
                        seed=0)
    batches = batches_of(sampler)
    assert len(batches) == 80 // 20
    for batch in batches:
        counts = Counter(labels[batch].tolist())
        assert len(counts) == 5 and set(counts.values()) == {4}
        assert len(set(batch)) == 20
    # 20 class draws over 10 classes: each class twice, each image once
    assert sorted(i for b in batches for i in b) == list(range(80))


def test_pk_small_classes_and_plain_dataset():
    labels = [0] * 2 + [1] * 6 + [2] * 6
    sampler = PKSampler(InfoDataset(labels), batch_size=8, num_per_class=4,
                        num_batches=6, seed=1)
    batches = batches_of(sampler)
    assert len(batches) == 6
    for batch in batches:
        counts = Counter(labels[i] for i in batch)
        assert len(counts) == 2 and set(counts.values()) == {4}
        small = [i for i in batch if labels[i] == 0]
        if small:  # the 2-image class is drawn with repetition
            assert set(small) == {0, 1}


def test_pk_reproducible_per_epoch():
    labels = np.repeat(np.arange(12), 5)
    first = PKSampler(LabelDataset(labels), batch_size=12, num_per_class=3,
                      seed=7)
    second = PKSampler(LabelDataset(labels), batch_size=12, num_per_class=3,
                       seed=7)
    assert list(first) == list(second)
    epoch0 = list(first)
    first.set_epoch(1)
    assert list(first) != epoch0
    first.set_epoch(0)
    assert list(first) == epoch0
    other = PKSampler(LabelDataset(labels), batch_size=12, num_per_class=3,
                      seed=8)
    assert list(other) != epoch0


@pytest.mark.parametrize('world_size', [2, 3])
def test_pk_distributed_shares(monkeypatch, world_size):
    labels = np.repeat(np.arange(20), 4)
    dataset = LabelDataset(labels)
    per_rank = []
    for rank in range(world_size):
        fake_world(monkeypatch, rank, world_size)
        sampler = PKSampler(dataset, batch_size=8, num_per_class=2,
                            num_batches=6, seed=3)
        per_rank.append(batches_of(sampler))
    assert all(len(b) == 6 // world_size for b in per_rank)
    fake_world(monkeypatch, 0, 1)
    single = batches_of(
        PKSampler(dataset, batch_size=8, num_per_class=2, num_batches=6,
                  seed=3))
    # the ranks deal the single-process plan: nothing duplicated or lost
    dealt = [per_rank[i % world_size][i // world_size] for i in range(6)]
    assert dealt == single


def super_dataset():
    # 4 super-classes with 6 classes of 5 images each
    labels = np.repeat(np.arange(24), 5)
    return LabelDataset(labels, labels // 6), labels, labels // 6


def test_super_class_pairs():
    dataset, labels, supers = super_dataset()
    sampler = SuperClassPairSampler(dataset, batch_size=16, num_per_class=4,
                                    batches_per_pair=3, num_batches=7, seed=0)
    batches = batches_of(sampler)
    assert len(batches) == 7
    pairs = []
    for batch in batches:
        counts = Counter(labels[batch].tolist())
        assert len(counts) == 4 and set(counts.values()) == {4}
        per_super = Counter(supers[batch].tolist())
        assert len(per_super) == 2 and set(per_super.values()) == {8}
        pairs.append(tuple(sorted(per_super)))
    # groups of 3 consecutive batches share their pair
    for start in range(0, 7, 3):
        assert len(set(pairs[start:start + 3])) == 1
    assert len(set(pairs)) > 1


def test_super_class_pairs_distributed_keep_groups(monkeypatch):
    dataset, labels, supers = super_dataset()
    seen = []
    for rank in range(2):
        fake_world(monkeypatch, rank, 2)
        sampler = SuperClassPairSampler(dataset, batch_size=16,
                                        num_per_class=4, batches_per_pair=2,
                                        num_batches=8, seed=5)
        batches = batches_of(sampler)
        assert len(batches) == 4
        pairs = [tuple(sorted(set(supers[b].tolist()))) for b in batches]
        assert pairs[0] == pairs[1] and pairs[2] == pairs[3]
        seen += [tuple(b) for b in batches]
    assert len(set(seen)) == len(seen)  # no batch on two ranks


def test_super_class_pair_fills_from_other_classes():
    # super-class 1 has a single class: batches need 4 classes
    labels = np.repeat(np.arange(7), 4)
    supers = np.array([0] * 24 + [1] * 4)
    sampler = SuperClassPairSampler(LabelDataset(labels, supers),
                                    batch_size=8, num_per_class=2,
                                    batches_per_pair=1, num_batches=3,
                                    seed=0)
    for batch in batches_of(sampler):
        assert len(set(labels[batch].tolist())) == 4


def test_registry_and_errors():
    dataset, labels, _ = super_dataset()
    sampler = DATA_SAMPLERS.build(
        dict(type='SuperClassPairSampler', batch_size=16, num_per_class=4),
        default_args=dict(dataset=dataset, seed=0))
    assert isinstance(sampler, SuperClassPairSampler)
    assert len(sampler) == (len(labels) // 16) * 16
    assert isinstance(
        DATA_SAMPLERS.build(
            dict(type='PKSampler', batch_size=8),
            default_args=dict(dataset=dataset, seed=None)), PKSampler)
    with pytest.raises(ValueError, match='multiple of num_per_class'):
        PKSampler(dataset, batch_size=10, num_per_class=4)
    with pytest.raises(ValueError, match='only 24 classes'):
        PKSampler(dataset, batch_size=200, num_per_class=2)
    with pytest.raises(ValueError, match='super_label'):
        SuperClassPairSampler(LabelDataset(labels), batch_size=8)
    with pytest.raises(ValueError, match='at least 2 super-classes'):
        SuperClassPairSampler(
            LabelDataset(labels, np.zeros_like(labels)), batch_size=8)
    with pytest.raises(ValueError, match='batch_size'):
        PKSampler(dataset, batch_size=0)
    with pytest.raises(ValueError, match='empty'):
        PKSampler(LabelDataset([]), batch_size=4)
