"""Batch-structured samplers for metric learning (P x K, super-class pairs).

A rank loss needs several images of each class in a batch (FastAP, Cakir et al.
2019, section 4.2; RaMBO, Appendix A). These samplers plan whole batches and
yield their indices back to back (the dataloader's ``batch_size`` must be
theirs), like MMEngine's ``DefaultSampler``: an epoch's plan depends only on
``seed`` and the epoch; every rank plans the same epoch and takes its share of
whole batches (or groups); an epoch is ``num_batches`` batches (default: the
dataset's full batches)."""
import math
import warnings
from typing import Iterator, List, Optional, Sequence, Sized

import numpy as np
from mmengine.dist import get_dist_info, sync_random_seed
from torch.utils.data import Sampler

from mmdet.registry import DATA_SAMPLERS

__all__ = ['PKSampler', 'SuperClassPairSampler']


def _dataset_array(dataset: Sized, getter: str, key: str) -> np.ndarray:
    """Labels of every sample without loading images."""
    if hasattr(dataset, getter):
        values = getattr(dataset, getter)()
        if values is None:
            raise ValueError(f'{type(dataset).__name__} has no {key} '
                             f'(its {getter}() returned None)')
        return np.asarray(values, dtype=np.int64)
    if hasattr(dataset, 'get_data_info'):
        return np.array(
            [int(dataset.get_data_info(i)[key]) for i in range(len(dataset))],
            dtype=np.int64)
    raise ValueError(f'{type(dataset).__name__} provides neither {getter}() '
                     f'nor get_data_info()["{key}"]')


def _check_int(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value,
                                                 int) or value < minimum:
        raise ValueError(f'{name} must be an int >= {minimum}, got {value!r}')
    return value


class _Pool:
    """Draws items in shuffled rounds: every item once before any repeat."""

    def __init__(self, items: Sequence[int], rng: np.random.Generator):
        self.items = np.asarray(items)
        self.rng = rng
        self.queue: List[int] = []

    def draw(self, n: int, exclude: Sequence[int] = ()) -> List[int]:
        """``n`` distinct items (not in ``exclude``), as long as possible."""
        available = len(set(self.items.tolist()) - set(exclude))
        n = min(n, available)
        out: List[int] = []
        skipped: List[int] = []
        while len(out) < n:
            if not self.queue:
                self.queue = self.rng.permutation(self.items).tolist()
            item = self.queue.pop()
            if item in exclude or item in out:
                skipped.append(item)
            else:
                out.append(item)
        self.queue.extend(skipped)
        return out


class _BatchPlanSampler(Sampler):
    """Plans an epoch of batches, deals groups of them to the ranks.

    Its arguments are :class:`PKSampler`'s (which adds nothing to it).
    """

    def __init__(self,
                 dataset: Sized,
                 batch_size: int,
                 num_per_class: int = 4,
                 num_batches: Optional[int] = None,
                 seed: Optional[int] = None) -> None:
        self.dataset = dataset
        self.batch_size = _check_int('batch_size', batch_size)
        self.num_per_class = _check_int('num_per_class', num_per_class)
        if batch_size % num_per_class:
            raise ValueError(
                f'batch_size ({batch_size}) must be a multiple of '
                f'num_per_class ({num_per_class})')
        self.classes_per_batch = batch_size // num_per_class
        self.labels = _dataset_array(dataset, 'get_labels', 'gt_label')
        if len(self.labels) == 0:
            raise ValueError('the dataset is empty')
        self.class_ids, inverse = np.unique(self.labels, return_inverse=True)
        self.members = [
            np.flatnonzero(inverse == c) for c in range(len(self.class_ids))
        ]
        if self.classes_per_batch > len(self.class_ids):
            raise ValueError(
                f'batch_size / num_per_class = {self.classes_per_batch} '
                f'classes per batch, but the dataset has only '
                f'{len(self.class_ids)} classes')
        self._warn_small_classes()
        self.rank, self.world_size = get_dist_info()
        self.seed = sync_random_seed() if seed is None else int(seed)
        self.epoch = 0
        if num_batches is None:
            num_batches = max(1, len(self.labels) // batch_size)
        self.num_batches = _check_int('num_batches', num_batches)
        self.batches_per_rank = math.ceil(num_batches / self.world_size)

    def _warn_small_classes(self) -> None:
        """Warn about classes with fewer than K images (named, with their
        counts): they are filled up by repeating their images, and a class
        with one image has only copies of itself as positives."""
        counts = np.array([len(m) for m in self.members])
        small = np.flatnonzero(counts < self.num_per_class)
        if not len(small):
            return
        order = small[np.argsort(counts[small], kind='stable')]
        named = ', '.join(f'class {self.class_ids[c]}: {counts[c]} image'
                          f'{"s" if counts[c] > 1 else ""}'
                          for c in order[:5])
        singles = int((counts == 1).sum())
        warnings.warn(
            f'{type(self).__name__}: {len(small)} of {len(counts)} classes '
            f'have fewer than num_per_class={self.num_per_class} images '
            f'({named}{", ..." if len(small) > 5 else ""}); their images '
            'are repeated within a batch' +
            (f', and the {singles} classes with a single image have only '
             'copies of that image as positives' if singles else ''),
            stacklevel=3)

    # Subclasses define ``_new_state(rng)`` (the pools of an epoch) and
    # ``_plan_group(rng, state)`` (a group of ``group_size`` consecutive
    # batches that stays on one rank).
    group_size = 1

    def _images(self, rng: np.random.Generator, pools, class_index: int):
        """``num_per_class`` images of a class, with replacement only when
        the class has fewer images."""
        members = self.members[class_index]
        if len(members) >= self.num_per_class:
            return pools[class_index].draw(self.num_per_class)
        extra = rng.choice(members, self.num_per_class - len(members))
        return members.tolist() + extra.tolist()

    def batches(self) -> List[List[int]]:
        """This rank's batches of the current epoch (lists of indices)."""
        rng = np.random.default_rng([self.seed, self.epoch])
        state = self._new_state(rng)
        groups_per_rank = math.ceil(self.batches_per_rank / self.group_size)
        mine: List[List[int]] = []
        for g in range(groups_per_rank * self.world_size):
            group = self._plan_group(rng, state)
            if g % self.world_size == self.rank:
                mine.extend(group)
        return mine[:self.batches_per_rank]

    def __iter__(self) -> Iterator[int]:
        for batch in self.batches():
            yield from batch

    def __len__(self) -> int:
        """Indices this rank yields per epoch."""
        return self.batches_per_rank * self.batch_size

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch's plan (called by ``DistSamplerSeedHook``)."""
        self.epoch = epoch


@DATA_SAMPLERS.register_module()
class PKSampler(_BatchPlanSampler):
    """P classes x K images per batch (class-balanced; CUB: K = 4).

    ``P = batch_size / num_per_class`` distinct classes of ``K`` images each,
    drawn in shuffled rounds; a class with fewer than K images repeats some (a
    warning names it at construction).

    Args:
        dataset (Sized): A dataset with ``get_labels()`` (see
            :class:`~mmdet_rankloss.datasets.RetrievalDataset`) or
            ``get_data_info(i)['gt_label']``.
        batch_size (int): Images per batch; must equal the dataloader's.
        num_per_class (int): K. Defaults to 4.
        num_batches (int, optional): Batches per epoch over all ranks. Defaults
            to None: ``len(dataset) // batch_size`` (at least 1).
        seed (int, optional): Base seed; None syncs a random one across ranks.
            Defaults to None.
    """

    def _new_state(self, rng: np.random.Generator):
        return dict(
            classes=_Pool(range(len(self.class_ids)), rng),
            images=[_Pool(m, rng) for m in self.members])

    def _plan_group(self, rng: np.random.Generator, state) -> List[List[int]]:
        batch: List[int] = []
        for c in state['classes'].draw(self.classes_per_batch):
            batch.extend(self._images(rng, state['images'], c))
        return [batch]


@DATA_SAMPLERS.register_module()
class SuperClassPairSampler(_BatchPlanSampler):
    """Consecutive batches from one pair of super-classes (FastAP, RaMBO).

    FastAP's "hard" batches (Cakir et al. 2019, section 4.2; RaMBO Appendix A):
    ``batches_per_pair`` consecutive batches from the classes of a drawn pair
    of super-classes, half from each, ``num_per_class`` images a class (filled
    from other super-classes when the pair has too few). Pairs, classes and
    images are drawn in shuffled rounds; under DDP a group stays on one rank.
    The papers' settings: docs/retrieval.md#samplers.

    Args:
        dataset (Sized): As for :class:`PKSampler`, with super-class labels
            too: ``get_super_labels()`` (or ``super_label`` in
            ``get_data_info``).
        batches_per_pair (int): Consecutive batches per super-class pair.
            Defaults to 10.
        batch_size, num_per_class, num_batches, seed: As for
            :class:`PKSampler`.
    """

    def __init__(self,
                 dataset: Sized,
                 batch_size: int,
                 num_per_class: int = 4,
                 batches_per_pair: int = 10,
                 num_batches: Optional[int] = None,
                 seed: Optional[int] = None) -> None:
        super().__init__(dataset, batch_size, num_per_class, num_batches,
                         seed)
        self.group_size = _check_int('batches_per_pair', batches_per_pair)
        super_labels = _dataset_array(dataset, 'get_super_labels',
                                      'super_label')
        if super_labels.shape != self.labels.shape:
            raise ValueError('super labels and labels differ in length')
        # the super-class of each class (its first image's)
        first = np.array([m[0] for m in self.members])
        class_super = super_labels[first]
        for c, m in enumerate(self.members):
            if np.any(super_labels[m] != class_super[c]):
                raise ValueError(
                    f'class {self.class_ids[c]} has images in several '
                    'super-classes')
        self.super_ids = np.unique(class_super)
        if len(self.super_ids) < 2:
            raise ValueError('SuperClassPairSampler needs at least 2 '
                             f'super-classes, got {len(self.super_ids)}')
        self.super_classes = [
            np.flatnonzero(class_super == s) for s in self.super_ids
        ]
        n = len(self.super_ids)
        self.pairs = [(a, b) for a in range(n) for b in range(a + 1, n)]

    def _new_state(self, rng: np.random.Generator):
        return dict(
            pairs=_Pool(range(len(self.pairs)), rng),
            classes=[_Pool(c, rng) for c in self.super_classes],
            all_classes=_Pool(range(len(self.class_ids)), rng),
            images=[_Pool(m, rng) for m in self.members])

    def _plan_group(self, rng: np.random.Generator, state) -> List[List[int]]:
        first, second = self.pairs[state['pairs'].draw(1)[0]]
        group = []
        for _ in range(self.group_size):
            wanted = self.classes_per_batch
            chosen = state['classes'][first].draw(wanted // 2)
            chosen += state['classes'][second].draw(wanted - len(chosen))
            if len(chosen) < wanted:
                chosen += state['classes'][first].draw(
                    wanted - len(chosen), exclude=chosen)
            if len(chosen) < wanted:
                chosen += state['all_classes'].draw(
                    wanted - len(chosen), exclude=chosen)
            batch: List[int] = []
            for c in chosen:
                batch.extend(self._images(rng, state['images'], c))
            group.append(batch)
        return group
