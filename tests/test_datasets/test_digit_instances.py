"""DigitInstancesDataset: the SOP protocol on scikit-learn's digits (each
image a class, held-out instances), and the retrieval demo's claim that
raw pixels cannot retrieve its views."""
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.registry import init_default_scope
from sklearn.datasets import load_digits

from mmdet.registry import DATASETS, TRANSFORMS
from rankloss_lab.datasets import DigitInstancesDataset
from mmdet_rankloss.evaluation import retrieval_metrics

init_default_scope('mmdet')
ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def test_splits_hold_disjoint_instances_each_in_every_view():
    splits = {
        name: DigitInstancesDataset(split=name, views=3, pipeline=[])
        for name in DigitInstancesDataset.SPLITS
    }
    instances = {name: set(ds.get_labels().tolist())
                 for name, ds in splits.items()}
    assert [len(instances[n]) for n in ('train', 'val', 'test')] == [
        997, 300, 500]
    assert not instances['train'] & instances['val']
    assert not instances['train'] & instances['test']
    assert not instances['val'] & instances['test']
    digits = load_digits()
    test = splits['test']
    assert len(test) == 3 * 500
    labels = test.get_labels()
    assert all(np.sum(labels == c) == 3 for c in instances['test'])
    for i in (0, 1, 2, 700):
        info = test.get_data_info(i)
        # the instance is its load_digits() index: the image and digit agree
        assert np.array_equal(
            info['img'],
            np.round(digits.images[info['gt_label']] * (255 / 16)).astype(
                np.uint8))
        assert info['digit'] == digits.target[info['gt_label']]
    assert [test.get_data_info(i)['view'] for i in range(4)] == [0, 1, 2, 0]


def test_the_split_follows_its_seed_and_is_built_from_a_config():
    a = DATASETS.build(dict(type='DigitInstancesDataset', split='val'))
    b = DigitInstancesDataset(split='val', split_seed=1)
    assert set(a.get_labels()) != set(b.get_labels())
    assert np.array_equal(
        a.get_labels(), DigitInstancesDataset(split='val').get_labels())


@pytest.mark.parametrize('kwargs, match', [
    (dict(views=1), 'views'),
    (dict(views=2.0), 'views'),
    (dict(split_sizes=(1000, 500, 500)), 'split_sizes'),
    (dict(split_sizes=(10, 0, 10)), 'split_sizes'),
    (dict(split_sizes=(10, 10)), 'split_sizes'),
    (dict(split_seed=-1), 'split_seed'),
    (dict(split='all'), 'split'),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DigitInstancesDataset(**kwargs)


def test_raw_pixels_fail_on_the_views_of_the_demo():
    """The demo's claim: views drawn as in
    `_base_/datasets/digit_instances.py` leave raw pixels near chance at
    finding another view of the same instance (plain images: trivially
    found), so learning has something to win."""
    from mmengine.config import Config
    cfg = Config.fromfile(
        osp.join(ROOT, 'configs', 'retrieval', '_base_', 'datasets',
                 'digit_instances.py'))
    scene = TRANSFORMS.build(cfg.test_pipeline[0])
    dataset = DigitInstancesDataset(
        split='test', pipeline=[], split_sizes=(997, 300, 100))
    infos = [dataset.get_data_info(i) for i in range(len(dataset))]
    labels = torch.tensor([info['gt_label'] for info in infos])

    def recall_at_1(images):
        emb = torch.nn.functional.normalize(
            torch.tensor(np.stack(images), dtype=torch.float32).flatten(1),
            dim=1)
        return retrieval_metrics(emb, labels, ks=(1, ))['R@1']

    plain = recall_at_1([info['img'] for info in infos])
    views = recall_at_1(
        [scene(dict(info, sample_idx=i))['img'] for i, info in
         enumerate(infos)])
    assert plain == 1.0 and views < 0.15, (plain, views)
