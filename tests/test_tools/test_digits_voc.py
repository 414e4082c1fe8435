"""DigitsVOC: layout, determinism, disjoint digit images across splits,
the properties that make it hard, and MMDetection reading and scoring it."""
import filecmp
import os.path as osp
import subprocess
import sys
from xml.etree import ElementTree as ET

import numpy as np
import pytest
import torch

from rankloss_lab.datasets.digits_voc import (DIGIT_CLASSES,
                                                _digit_pools,
                                                make_digits_voc)

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
SPLITS = (('train', 24), ('val', 8), ('test', 10))


@pytest.fixture(scope='module')
def digits_data(tmp_path_factory):
    root = str(tmp_path_factory.mktemp('digits') / 'VOCdevkit')
    stats = make_digits_voc(root, splits=SPLITS, seed=0)
    return root, stats


def _objects(root, img_id):
    tree = ET.parse(osp.join(root, 'VOC2007', 'Annotations', f'{img_id}.xml'))
    return tree.getroot(), tree.findall('object')


def test_layout_splits_and_class_lists(digits_data):
    root, stats = digits_data
    main = osp.join(root, 'VOC2007', 'ImageSets', 'Main')
    ids = {s: open(osp.join(main, f'{s}.txt')).read().split()
           for s in ('train', 'val', 'trainval', 'test')}
    assert {s: len(v) for s, v in ids.items()} == dict(
        train=24, val=8, trainval=32, test=10)
    assert ids['trainval'] == ids['train'] + ids['val']
    assert not set(ids['train']) & set(ids['val'])
    assert not set(ids['trainval']) & set(ids['test'])
    for name in DIGIT_CLASSES:
        lines = open(osp.join(main, f'{name}_test.txt')).read().splitlines()
        assert [line.split()[0] for line in lines] == ids['test']
    for split, count in SPLITS:
        assert stats[split]['images'] == count
        assert stats[split]['objects'] == sum(stats[split]['counts'])


def test_objects_are_varied_hard_and_valid(digits_data):
    root, stats = digits_data
    sides, flags, truncated, per_image = [], [], [], []
    for split, count in SPLITS:
        for i in range(count):
            ann, objects = _objects(root, f'{split}_{i:05d}')
            assert ann.findtext('size/width') == '128'
            per_image.append(len(objects))
            for obj in objects:
                assert obj.findtext('name') in DIGIT_CLASSES
                box = [int(obj.findtext(f'bndbox/{k}'))
                       for k in ('xmin', 'ymin', 'xmax', 'ymax')]
                assert 1 <= box[0] < box[2] <= 128
                assert 1 <= box[1] < box[3] <= 128
                sides.append(max(box[2] - box[0], box[3] - box[1]))
                flags.append(obj.findtext('difficult') == '1')
                truncated.append(obj.findtext('truncated') == '1')
    assert max(per_image) >= 4 and min(per_image) >= 1
    assert min(sides) < 14 and max(sides) > 40  # scale varies
    assert 0.05 < np.mean(flags) < 0.5  # some difficult
    assert any(truncated)
    counts = np.sum([stats[s]['counts'] for s, _ in SPLITS], axis=0)
    assert counts[0] > 2 * counts[-1]  # imbalanced


def test_splits_use_disjoint_digit_images():
    pools = _digit_pools(0)
    seen = {}
    for split, per_class in pools.items():
        for k, images in per_class.items():
            assert len(images) > 0, (split, k)
            for img in images:
                seen.setdefault(img.tobytes(), set()).add(split)
    # identical 8x8 digits may exist in the source; almost all are unique
    shared = sum(len(s) > 1 for s in seen.values())
    assert shared <= 3 and len(seen) > 1700


def test_deterministic_and_seeded(tmp_path, same_tree):
    kw = dict(splits=(('train', 2), ('val', 1), ('test', 1)))
    a, b, c = (str(tmp_path / n) for n in 'abc')
    make_digits_voc(a, seed=1, **kw)
    make_digits_voc(b, seed=1, **kw)
    make_digits_voc(c, seed=2, **kw)
    assert same_tree(a, b)
    img = 'VOC2007/JPEGImages/train_00000.jpg'
    assert not filecmp.cmp(osp.join(a, img), osp.join(c, img), shallow=False)


@pytest.mark.parametrize('kwargs, match', [
    (dict(splits=(('train', 0), )), "'train'"),
    (dict(splits=(('train', 2), ('train', 1))), 'at most once'),
    (dict(splits=(('holdout', 2), )), 'at most once'),
    (dict(splits=(('val', 1.5), )), "'val'"),
    (dict(image_size=32), 'image_size'),
])
def test_bad_arguments(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_digits_voc(str(tmp_path), **kwargs)


@pytest.mark.slow
def test_cli(tmp_path):
    root = str(tmp_path / 'VOCdevkit')
    out = subprocess.run([
        sys.executable,
        osp.join(ROOT, 'tools', 'dataset_converters', 'make_digits_voc.py'),
        root,
        '--train', '2', '--val', '1', '--test', '1', '--preview',
        str(tmp_path / 'preview.png')
    ], capture_output=True, text=True, check=True).stdout
    assert 'train: 2 images' in out and 'test: 1 images' in out
    from PIL import Image
    assert Image.open(tmp_path / 'preview.png').size == (4 * 256, 256)


def test_mmdet_reads_and_scores_it(digits_data, voc_dataset):
    """MMDetection's VOCDataset reads every object with the right label, and
    VOCMetric scores ground truth fed back as detections as perfect."""
    from mmengine.registry import init_default_scope
    from mmdet.evaluation import VOCMetric
    init_default_scope('mmdet')
    root, _ = digits_data
    dataset = voc_dataset(root, 'test', classes=DIGIT_CLASSES)
    assert len(dataset) == 10
    assert dataset.metainfo['classes'] == DIGIT_CLASSES
    for i in range(len(dataset)):
        info = dataset.get_data_info(i)
        _, objects = _objects(root, f'test_{i:05d}')
        assert [DIGIT_CLASSES[inst['bbox_label']]
                for inst in info['instances']] == [
                    o.findtext('name') for o in objects]
        assert [inst['ignore_flag'] for inst in info['instances']] == [
            int(o.findtext('difficult')) for o in objects]
    metric = VOCMetric(iou_thrs=0.5, eval_mode='11points')
    metric.dataset_meta = dataset.metainfo
    for i in range(len(dataset)):
        sample = dataset[i]['data_samples']
        gt = sample.gt_instances
        metric.process({}, [
            dict(gt_instances=dict(bboxes=gt.bboxes.tensor, labels=gt.labels),
                 ignored_instances=dict(
                     bboxes=sample.ignored_instances.bboxes.tensor,
                     labels=sample.ignored_instances.labels),
                 pred_instances=dict(
                     bboxes=gt.bboxes.tensor,
                     scores=torch.ones(len(gt.labels)), labels=gt.labels))
        ])
    assert metric.compute_metrics(metric.results)['AP50'] == pytest.approx(1)
