"""The embedded toy VOC: layout, determinism, and MMDetection reading it."""
import filecmp
import os.path as osp
import subprocess
import sys

import numpy as np
import pytest
import torch

from rankloss_lab.datasets.toy_voc import TOY_CLASSES, make_toy_voc

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


@pytest.fixture(scope='module')
def toy_root(tmp_path_factory):
    root = str(tmp_path_factory.mktemp('toy') / 'VOCdevkit')
    make_toy_voc(root, num_trainval=12, num_test=8, image_size=64, seed=3,
                 difficult_prob=0.3)
    return root


def test_layout_and_class_lists(toy_root):
    year = osp.join(toy_root, 'VOC2007')
    main = osp.join(year, 'ImageSets', 'Main')
    trainval = open(osp.join(main, 'trainval.txt')).read().split()
    test = open(osp.join(main, 'test.txt')).read().split()
    assert len(trainval) == 12 and len(test) == 8
    assert not set(trainval) & set(test)
    for img_id in trainval + test:
        assert osp.isfile(osp.join(year, 'JPEGImages', f'{img_id}.jpg'))
        assert osp.isfile(osp.join(year, 'Annotations', f'{img_id}.xml'))
    for name in TOY_CLASSES:
        lines = open(osp.join(main, f'{name}_test.txt')).read().splitlines()
        assert [line.split()[0] for line in lines] == test
        assert {int(line.split()[1]) for line in lines} <= {-1, 0, 1}


def test_deterministic_and_seeded(tmp_path, same_tree):
    a, b, c = (str(tmp_path / n) for n in 'abc')
    make_toy_voc(a, num_trainval=3, num_test=2, image_size=48, seed=1)
    make_toy_voc(b, num_trainval=3, num_test=2, image_size=48, seed=1)
    make_toy_voc(c, num_trainval=3, num_test=2, image_size=48, seed=2)
    assert same_tree(a, b)
    img = 'VOC2007/JPEGImages/000001.jpg'
    assert not filecmp.cmp(osp.join(a, img), osp.join(c, img), shallow=False)


@pytest.mark.parametrize('kwargs', [
    dict(num_trainval=0), dict(num_test=-1), dict(image_size=16),
    dict(difficult_prob=1.5), dict(num_trainval=2.5)
])
def test_bad_arguments(tmp_path, kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        make_toy_voc(str(tmp_path), **kwargs)


@pytest.mark.slow
def test_cli_writes_voc2012(tmp_path):
    root = str(tmp_path / 'VOCdevkit')
    out = subprocess.run([
        sys.executable,
        osp.join(ROOT, 'tools', 'dataset_converters', 'make_toy_voc.py'), root,
        '--num-trainval',
        '2', '--num-test', '1', '--image-size', '48', '--with-voc2012'
    ], capture_output=True, text=True, check=True).stdout
    assert 'VOC2012/trainval: 2 images' in out
    assert osp.isfile(
        osp.join(root, 'VOC2012', 'ImageSets', 'Main', 'trainval.txt'))


def test_mmdet_voc_dataset_reads_it(toy_root, voc_dataset):
    from mmengine.registry import init_default_scope
    init_default_scope('mmdet')
    dataset = voc_dataset(toy_root, 'trainval', test_mode=False)
    assert len(dataset) == 12
    assert dataset.metainfo['dataset_type'] == 'VOC2007'
    infos = [dataset.get_data_info(i) for i in range(len(dataset))]
    flags = [
        inst['ignore_flag'] for info in infos for inst in info['instances']
    ]
    assert 0 in flags and 1 in flags  # difficult objects become ignored
    labels = {
        dataset.metainfo['classes'][inst['bbox_label']]
        for info in infos for inst in info['instances']
    }
    assert labels <= set(TOY_CLASSES)
    sample = dataset[0]
    assert tuple(sample['inputs'].shape) == (3, 64, 64)
    boxes = sample['data_samples'].gt_instances.bboxes.tensor
    assert boxes.numel() == 0 or (boxes.min() >= 0 and boxes.max() <= 64)


def test_voc_metric_scores_ground_truth_as_perfect(toy_root, voc_dataset):
    """Ground truth fed back as detections gives AP50 = 1; shifted boxes
    lose it. Checks that the boxes written, read and evaluated agree."""
    from mmengine.registry import init_default_scope
    from mmdet.evaluation import VOCMetric
    init_default_scope('mmdet')
    dataset = voc_dataset(toy_root, 'test', test_mode=True)

    def evaluate(shift):
        metric = VOCMetric(iou_thrs=0.5, eval_mode='11points')
        metric.dataset_meta = dataset.metainfo
        rng = np.random.default_rng(0)
        for i in range(len(dataset)):
            sample = dataset[i]['data_samples']
            gt = sample.gt_instances
            boxes = gt.bboxes.tensor.clone()
            boxes[:, [0, 2]] += shift * (boxes[:, 2:3] - boxes[:, 0:1])
            pred = dict(
                bboxes=boxes,
                scores=torch.as_tensor(rng.uniform(0.5, 1, len(boxes))),
                labels=gt.labels)
            metric.process({}, [
                dict(
                    gt_instances=dict(
                        bboxes=gt.bboxes.tensor, labels=gt.labels),
                    ignored_instances=dict(
                        bboxes=sample.ignored_instances.bboxes.tensor,
                        labels=sample.ignored_instances.labels),
                    pred_instances=pred)
            ])
        return metric.compute_metrics(metric.results)['AP50']

    assert evaluate(0.0) == pytest.approx(1.0)
    assert evaluate(0.6) == pytest.approx(0.0)


def test_val_split_is_held_out_and_leaves_the_others_unchanged(tmp_path):
    """``num_val`` adds a val split of other images, written after every
    other split, so trainval and test are the same files as without it."""
    plain, with_val = str(tmp_path / 'a'), str(tmp_path / 'b')
    make_toy_voc(plain, num_trainval=6, num_test=4, image_size=64)
    stats = make_toy_voc(with_val, num_trainval=6, num_test=4, num_val=3,
                         image_size=64)
    assert stats['VOC2007/val']['images'] == 3
    main = osp.join('VOC2007', 'ImageSets', 'Main')
    val = open(osp.join(with_val, main, 'val.txt')).read().split()
    for split in ('trainval', 'test'):
        ids = open(osp.join(plain, main, f'{split}.txt')).read().split()
        assert open(osp.join(with_val, main,
                             f'{split}.txt')).read().split() == ids
        assert not set(ids) & set(val)
        for img_id in ids:
            for sub, ext in (('JPEGImages', 'jpg'), ('Annotations', 'xml')):
                assert filecmp.cmp(
                    osp.join(plain, 'VOC2007', sub, f'{img_id}.{ext}'),
                    osp.join(with_val, 'VOC2007', sub, f'{img_id}.{ext}'),
                    shallow=False)
    with pytest.raises(ValueError, match='num_val'):
        make_toy_voc(plain, num_val=-1)
