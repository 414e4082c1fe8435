"""Retrieval datasets on miniature copies of the official formats."""
import os.path as osp

import numpy as np
import pytest
import torch
from mmengine.registry import init_default_scope

from mmdet.registry import DATASETS
from mmdet_rankloss.datasets import (CUB200Dataset, InShopDataset,
                                     PackRetrievalInputs, SOPDataset)

init_default_scope('mmdet')


def write_image(path, seed=0, size=(40, 30)):
    import cv2
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)
    assert cv2.imwrite(path, img)


def write(path, lines):
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


@pytest.fixture
def cub_root(tmp_path):
    """CUB_200_2011 layout: images.txt, image_class_labels.txt, images/."""
    entries = [(1, '001.A'), (1, '001.A'), (2, '002.B'), (101, '101.C'),
               (101, '101.C'), (200, '200.D')]
    images, labels = [], []
    for image_id, (cls, folder) in enumerate(entries, 1):
        rel = f'{folder}/img_{image_id}.jpg'
        (tmp_path / 'images' / folder).mkdir(parents=True, exist_ok=True)
        write_image(str(tmp_path / 'images' / rel), image_id)
        images.append(f'{image_id} {rel}')
        labels.append(f'{image_id} {cls}')
    write(tmp_path / 'images.txt', images)
    write(tmp_path / 'image_class_labels.txt', labels)
    return str(tmp_path)


def test_cub_split_by_class(cub_root):
    train = CUB200Dataset(data_root=cub_root, split='train')
    test = DATASETS.build(
        dict(type='CUB200Dataset', data_root=cub_root, split='test'))
    assert len(train) == 3 and len(test) == 3
    assert train.get_labels().tolist() == [1, 1, 2]
    assert test.get_labels().tolist() == [101, 101, 200]
    assert test.get_super_labels() is None
    info = train.get_data_info(0)
    assert info['img_path'] == osp.join(cub_root, 'images', '001.A/img_1.jpg')
    assert osp.isfile(info['img_path'])


def test_cub_pipeline_from_config(cub_root):
    pipeline = [
        dict(type='LoadImageFromFile'),
        dict(type='Resize', scale=(64, 64), keep_ratio=False),
        dict(type='RandomCrop', crop_size=(56, 56)),
        dict(type='RandomFlip', prob=0.5),
        dict(type='PackRetrievalInputs')
    ]
    dataset = CUB200Dataset(
        data_root=cub_root, split='train', pipeline=pipeline)
    item = dataset[2]
    assert item['inputs'].shape == (3, 56, 56)
    assert item['inputs'].dtype == torch.uint8
    sample = item['data_samples']
    assert int(sample.gt_label) == 2 and sample.sample_idx == 2
    assert sample.img_path.endswith('img_3.jpg')


def test_cub_missing_files_and_counts(cub_root, tmp_path_factory):
    empty = str(tmp_path_factory.mktemp('empty'))
    with pytest.raises(FileNotFoundError, match='images.txt'):
        CUB200Dataset(data_root=empty)
    with pytest.raises(ValueError, match='5864'):
        CUB200Dataset(data_root=cub_root, split='train', check_counts=True)
    with pytest.raises(ValueError, match='split'):
        CUB200Dataset(data_root=cub_root, split='val')
    # a full-size list (11,788 images) triggers the check automatically
    full = tmp_path_factory.mktemp('full')
    write(full / 'images.txt', [f'{i} x/{i}.jpg' for i in range(1, 11789)])
    write(full / 'image_class_labels.txt',
          [f'{i} {1 + (i - 1) % 200}' for i in range(1, 11789)])
    with pytest.raises(ValueError, match='official release has 5864'):
        CUB200Dataset(data_root=str(full), split='train')
    assert len(
        CUB200Dataset(data_root=str(full), split='train',
                      check_counts=False)) == 5900


@pytest.fixture
def sop_root(tmp_path):
    header = 'image_id class_id super_class_id path'
    write(tmp_path / 'Ebay_train.txt', [
        header, '1 1 1 bicycle_final/1_0.JPG', '2 1 1 bicycle_final/1_1.JPG',
        '3 2 2 chair_final/2_0.JPG', '4 2 2 chair_final/2_1.JPG'
    ])
    write(tmp_path / 'Ebay_test.txt',
          [header, '5 3 1 bicycle_final/3_0.JPG', '6 3 1 bicycle_final/3_1.JPG'])
    return str(tmp_path)


def test_sop(sop_root, tmp_path_factory):
    train = SOPDataset(data_root=sop_root, split='train')
    assert train.get_labels().tolist() == [1, 1, 2, 2]
    assert train.get_super_labels().tolist() == [1, 1, 2, 2]
    assert train.get_data_info(2)['img_path'] == osp.join(
        sop_root, 'chair_final/2_0.JPG')
    test = SOPDataset(data_root=sop_root, split='test')
    assert len(test) == 2
    with pytest.raises(ValueError, match='60502'):
        SOPDataset(data_root=sop_root, split='test', check_counts=True)
    with pytest.raises(FileNotFoundError, match='Ebay_train.txt'):
        SOPDataset(data_root=str(tmp_path_factory.mktemp('none')))
    bad = tmp_path_factory.mktemp('bad')
    write(bad / 'Ebay_train.txt', ['1 1 1 a.JPG'])
    with pytest.raises(ValueError, match='header'):
        SOPDataset(data_root=str(bad))


@pytest.fixture
def inshop_root(tmp_path):
    rows = [
        ('img/WOMEN/Dresses/id_00000002/01_1_front.jpg', 'id_00000002',
         'train'),
        ('img/WOMEN/Dresses/id_00000002/01_2_side.jpg', 'id_00000002',
         'train'),
        ('img/MEN/Denim/id_00000007/01_1_front.jpg', 'id_00000007', 'train'),
        ('img/MEN/Denim/id_00000009/01_1_front.jpg', 'id_00000009', 'query'),
        ('img/MEN/Denim/id_00000009/01_2_side.jpg', 'id_00000009',
         'gallery'),
        ('img/WOMEN/Skirts/id_00000011/01_1_front.jpg', 'id_00000011',
         'query'),
        ('img/WOMEN/Skirts/id_00000011/01_3_back.jpg', 'id_00000011',
         'gallery'),
    ]
    write(tmp_path / 'list_eval_partition.txt',
          [str(len(rows)), 'image_name item_id evaluation_status'] +
          [f'{a} {b} {c}' for a, b, c in rows])
    return str(tmp_path)


def test_inshop_splits(inshop_root):
    train = InShopDataset(data_root=inshop_root, split='train')
    assert train.get_labels().tolist() == [2, 2, 7]
    # categories in sorted order: MEN/Denim, WOMEN/Dresses, WOMEN/Skirts
    assert train.get_super_labels().tolist() == [1, 1, 0]
    query = InShopDataset(data_root=inshop_root, split='query')
    gallery = InShopDataset(data_root=inshop_root, split='gallery')
    assert query.get_labels().tolist() == [9, 11]
    assert gallery.get_labels().tolist() == [9, 11]
    assert 'is_query' not in query.get_data_info(0)
    test = InShopDataset(data_root=inshop_root, split='test')
    flags = [test.get_data_info(i)['is_query'] for i in range(len(test))]
    assert flags == [True, False, True, False]
    assert test.get_data_info(0)['img_path'] == osp.join(
        inshop_root, 'img/MEN/Denim/id_00000009/01_1_front.jpg')
    with pytest.raises(ValueError, match='25882'):
        InShopDataset(data_root=inshop_root, split='train', check_counts=True)


def test_inshop_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match='list_eval_partition.txt'):
        InShopDataset(data_root=str(tmp_path))
    write(tmp_path / 'list_eval_partition.txt', ['image_name item_id'])
    with pytest.raises(ValueError, match='header'):
        InShopDataset(data_root=str(tmp_path))


def test_pack_inputs():
    pack = PackRetrievalInputs()
    out = pack(
        dict(
            img=np.zeros((5, 6, 3), np.uint8),
            gt_label=3,
            is_query=True,
            sample_idx=4,
            other='x'))
    assert out['inputs'].shape == (3, 5, 6)
    sample = out['data_samples']
    assert sample.is_query is True and sample.sample_idx == 4
    assert 'other' not in sample.metainfo_keys()
    assert sample.gt_label.dtype == torch.int64
    with pytest.raises(ValueError, match='gt_label'):
        pack(dict(img=np.zeros((2, 2), np.uint8)))
    with pytest.raises(ValueError, match='shape'):
        pack(dict(img=np.zeros((2, 2, 2, 2)), gt_label=0))
