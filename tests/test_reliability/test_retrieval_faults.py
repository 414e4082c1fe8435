"""Fault catalogue, retrieval data: CUB-200-2011, SOP and In-Shop list files
and the P x K sampler. Each fault gives an error naming the file, the line
or row and the value, or (small classes) a warning naming the classes."""
import re

import numpy as np
import pytest
from mmengine.registry import init_default_scope

from mmdet_rankloss.datasets import CUB200Dataset, InShopDataset, SOPDataset
from mmdet_rankloss.samplers import PKSampler

init_default_scope('mmdet')

CUB_IMAGES = ['1 001.A/a.jpg', '2 001.A/b.jpg', '3 002.B/c.jpg']
CUB_LABELS = ['1 1', '2 1', '3 2']
SOP_HEADER = 'image_id class_id super_class_id path'
SOP_ROWS = ['1 1 1 bicycle_final/1_0.JPG', '2 1 1 bicycle_final/1_1.JPG']
INSHOP_HEAD = ['3', 'image_name item_id evaluation_status']
INSHOP_ROWS = [
    'img/WOMEN/Dresses/id_00000002/01_1_front.jpg id_00000002 train',
    'img/WOMEN/Dresses/id_00000002/01_2_side.jpg id_00000002 train',
    'img/MEN/Denim/id_00000007/01_1_front.jpg id_00000007 train'
]


def write(path, lines):
    path.write_text('\n'.join(lines) + '\n')


def cub(tmp_path, images=CUB_IMAGES, labels=CUB_LABELS):
    if images is not None:
        write(tmp_path / 'images.txt', images)
    if labels is not None:
        write(tmp_path / 'image_class_labels.txt', labels)
    return lambda: CUB200Dataset(data_root=str(tmp_path), split='train')


def sop(tmp_path, lines=[SOP_HEADER] + SOP_ROWS):
    if lines is not None:
        write(tmp_path / 'Ebay_train.txt', lines)
    return lambda: SOPDataset(data_root=str(tmp_path), split='train')


def inshop(tmp_path, lines=INSHOP_HEAD + INSHOP_ROWS):
    if lines is not None:
        write(tmp_path / 'list_eval_partition.txt', lines)
    return lambda: InShopDataset(data_root=str(tmp_path), split='train')


# (id, dataset factory, exception, regex of the message)
FAULTS = [
    ('cub-images-missing', lambda t: cub(t, images=None), FileNotFoundError,
     r'annotation file not found: .*images\.txt'),
    ('cub-labels-missing', lambda t: cub(t, labels=None), FileNotFoundError,
     r'annotation file not found: .*image_class_labels\.txt'),
    ('cub-images-one-column', lambda t: cub(t, images=['1 001.A/a.jpg', '2']),
     ValueError, r"images\.txt line 2 has 1 columns, expected 2 "
     r"\(image_id path\): '2'"),
    ('cub-labels-one-column', lambda t: cub(t, labels=['1', '2 1', '3 2']),
     ValueError, r'image_class_labels\.txt line 1 has 1 columns'),
    ('cub-label-zero', lambda t: cub(t, labels=['1 0', '2 1', '3 2']),
     ValueError, r"class_id must be an integer in 1\.\.200, got '0' in row "
     r"'1 0'"),
    ('cub-label-201', lambda t: cub(t, labels=['1 1', '2 201', '3 2']),
     ValueError, r"image_class_labels\.txt: class_id must be an integer in "
     r"1\.\.200, got '201'"),
    ('cub-label-not-int', lambda t: cub(t, labels=['1 1', '2 1', '3 B']),
     ValueError, r"got 'B' in row '3 B'"),
    ('cub-image-without-label', lambda t: cub(t, labels=['1 1', '2 1']),
     ValueError, r'1 image ids of .*images\.txt have no class in .*first: 3'),
    ('sop-list-missing', lambda t: sop(t, lines=None), FileNotFoundError,
     r'annotation file not found: .*Ebay_train\.txt'),
    ('sop-header-missing', lambda t: sop(t, lines=SOP_ROWS), ValueError,
     r'Ebay_train\.txt does not start with the header'),
    ('sop-row-three-columns',
     lambda t: sop(t, lines=[SOP_HEADER, SOP_ROWS[0], '2 1 1']), ValueError,
     r"Ebay_train\.txt line 3 has 3 columns, expected 4 .*'2 1 1'"),
    ('sop-class-negative',
     lambda t: sop(t, lines=[SOP_HEADER, '1 -1 1 bicycle_final/1_0.JPG']),
     ValueError, r"class_id must be an integer in >= 1, got '-1'"),
    ('sop-class-not-int',
     lambda t: sop(t, lines=[SOP_HEADER, '1 one 1 bicycle_final/1_0.JPG']),
     ValueError, r"class_id must be an integer in >= 1, got 'one'"),
    ('sop-super-class-13',
     lambda t: sop(t, lines=[SOP_HEADER, '1 1 13 bicycle_final/1_0.JPG']),
     ValueError, r"super_class_id must be an integer in 1\.\.12, got '13' "
     r"in row '1 1 13 bicycle_final/1_0\.JPG'"),
    ('inshop-list-missing', lambda t: inshop(t, lines=None),
     FileNotFoundError, r'list_eval_partition\.txt'),
    ('inshop-header-missing', lambda t: inshop(t, lines=INSHOP_ROWS),
     ValueError, r'must start with the number of images and the header'),
    ('inshop-row-two-columns',
     lambda t: inshop(t, lines=INSHOP_HEAD + ['img/a/b/c/d.jpg id_00000001']),
     ValueError, r'list_eval_partition\.txt line 3 has 2 columns, '
     r'expected 3'),
    ('inshop-item-id-format',
     lambda t: inshop(t, lines=INSHOP_HEAD +
                      ['img/MEN/Denim/x/01.jpg item7 train']),
     ValueError, r"item_id must look like 'id_00000001', got 'item7' for "
     r'img/MEN/Denim/x/01\.jpg'),
    ('inshop-unknown-status',
     lambda t: inshop(t, lines=INSHOP_HEAD +
                      ['img/MEN/Denim/id_1/01.jpg id_00000001 val']),
     ValueError, r"unknown evaluation_status 'val'"),
]


@pytest.mark.parametrize('make,error,message', [f[1:] for f in FAULTS],
                         ids=[f[0] for f in FAULTS])
def test_retrieval_dataset_names_the_fault(tmp_path, make, error, message):
    with pytest.raises(error, match=message):
        make(tmp_path)()


@pytest.mark.parametrize('make', [cub, sop, inshop])
def test_clean_lists_load(tmp_path, make):
    assert len(make(tmp_path)()) > 0


class Labels:
    """A dataset stand-in: only labels, as the sampler reads them."""

    def __init__(self, labels):
        self.labels = np.asarray(labels)

    def __len__(self):
        return len(self.labels)

    def get_labels(self):
        return self.labels


def test_pk_sampler_warns_about_a_single_image_class():
    labels = [0] * 4 + [1] * 4 + [7] + [9] * 2
    with pytest.warns(UserWarning) as record:
        sampler = PKSampler(Labels(labels), batch_size=8, num_per_class=4,
                            seed=0)
    message = str(record[0].message)
    assert re.search(r'2 of 4 classes have fewer than num_per_class=4 '
                     r'images \(class 7: 1 image, class 9: 2 images\)',
                     message), message
    assert 'the 1 classes with a single image have only copies' in message
    # the documented behaviour: the class is filled up with its one image
    batch = next(iter([sampler.batches()[0]]))
    assert len(batch) == 8


def test_pk_sampler_quiet_when_every_class_has_k_images(recwarn):
    PKSampler(Labels([0] * 4 + [1] * 5), batch_size=8, num_per_class=4,
              seed=0)
    assert not [w for w in recwarn if 'num_per_class' in str(w.message)]


@pytest.mark.parametrize('kwargs,message', [
    (dict(batch_size=6, num_per_class=4),
     r'batch_size \(6\) must be a multiple of num_per_class \(4\)'),
    (dict(batch_size=16, num_per_class=4),
     r'4 classes per batch, but the dataset has only 2 classes'),
    (dict(batch_size=8, num_per_class=0),
     r'num_per_class must be an int >= 1, got 0'),
    (dict(batch_size=8, num_per_class=True),
     r'num_per_class must be an int >= 1, got True'),
])
def test_pk_sampler_configuration_faults(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PKSampler(Labels([0] * 4 + [1] * 4), seed=0, **kwargs)
