"""CheckedCocoDataset and check_coco_file: a COCO-format file with a fault
stops with a message naming the file, the entry and the value, as VOC data
does (CheckedVOCDataset); a clean file loads exactly as MMDetection's
CocoDataset loads it."""
import copy
import json
import os.path as osp
import re

import pytest

from mmdet_rankloss.datasets import CheckedCocoDataset
from rankloss_lab.datasets import TOY_CATEGORY_IDS, TOY_CLASSES, make_toy_coco
from mmdet_rankloss.utils.coco_check import (CocoCheckError, check_coco_file,
                                             read_coco_json)


@pytest.fixture(scope='module')
def toy(tmp_path_factory):
    """A toy COCO set (8 train images of 64 px); its root and train JSON."""
    root = str(tmp_path_factory.mktemp('coco'))
    make_toy_coco(root, splits=(('train', 8), ), image_size=64)
    with open(osp.join(root, 'annotations', 'train.json')) as f:
        return root, json.load(f)


def write(root, name, data):
    path = osp.join(root, 'annotations', name)
    with open(path, 'w') as f:
        json.dump(data, f)
    return path


def build(root, ann_file, cls=CheckedCocoDataset, **kwargs):
    return cls(
        data_root=root,
        ann_file=ann_file,
        data_prefix=dict(img='images/'),
        metainfo=dict(classes=kwargs.pop('classes', TOY_CLASSES)),
        pipeline=[],
        **kwargs)


def test_toy_set_is_coco(toy):
    root, data = toy
    assert [c['id'] for c in data['categories']] == list(TOY_CATEGORY_IDS)
    assert len(data['images']) == 8 and data['annotations']
    report = check_coco_file(
        osp.join(root, 'annotations', 'train.json'),
        osp.join(root, 'images'), TOY_CLASSES)
    assert report.errors == [] and report.unknown == []
    assert report.num_images == 8


def test_clean_file_loads_as_mmdetection_does(toy):
    from mmdet.datasets import CocoDataset
    root, _ = toy
    checked = build(root, 'annotations/train.json')
    plain = build(root, 'annotations/train.json', cls=CocoDataset)
    assert len(checked) == len(plain) == 8
    for i in range(len(plain)):
        assert checked.get_data_info(i) == plain.get_data_info(i)
    # category ids 1, 3, 4, 7 become labels 0..3
    labels = {x['bbox_label'] for i in range(len(plain))
              for x in plain.get_data_info(i)['instances']}
    assert labels <= {0, 1, 2, 3} and len(labels) > 1


def _first_ann(data):
    return data['annotations'][0]


def _image_of(data, ann):
    return next(i for i in data['images'] if i['id'] == ann['image_id'])


def missing_image(data):
    data['images'][2]['file_name'] = 'nowhere.jpg'


def box_outside(data):
    ann = _first_ann(data)
    ann['bbox'][0] = _image_of(data, ann)['width'] - 2


def negative_corner(data):
    _first_ann(data)['bbox'][1] = -5


def unknown_category_id(data):
    _first_ann(data)['category_id'] = 99


def empty_annotations(data):
    data['annotations'] = []


def empty_images(data):
    data['images'] = []


def empty_box(data):
    _first_ann(data)['bbox'][2] = 0


def missing_area(data):
    del _first_ann(data)['area']


def duplicate_annotation_id(data):
    data['annotations'][1]['id'] = data['annotations'][0]['id']


def annotation_of_no_image(data):
    _first_ann(data)['image_id'] = 12345


def wrong_size(data):
    data['images'][0]['width'] = 65


def misspelled_class(data):
    data['categories'][1]['name'] = 'Car'


def categories_reordered(data):
    data['categories'] = data['categories'][::-1]


def bad_bbox(data):
    _first_ann(data)['bbox'] = [1, 2, 3]


def no_categories(data):
    del data['categories']


FAULTS = [
    (missing_image, r"image id \d+ \('nowhere.jpg'\): image not found: "
     r'.*images/nowhere.jpg'),
    (box_outside, r'annotations\[0\] \(id 1\) of image .*: box outside the '
     r'image, \(x \+ width, y \+ height\) = \(\d+, \d+\) but the image is '
     r'64x64'),
    (negative_corner, r'box outside the image, \(x, y\) = \(\d+, -5\)'),
    (unknown_category_id, r"annotations\[0\] \(id 1\) of image '\d+.jpg': "
     r"unknown category id 99 \(the file's categories: 1 'bottle', 3 'car'"),
    (empty_annotations, r'"annotations" is empty'),
    (empty_images, r'"images" is empty'),
    (empty_box, r'empty box, width 0 x height \d+'),
    (missing_area, r'missing "area"'),
    (duplicate_annotation_id, r'\(id 1\).*duplicate annotation id'),
    (annotation_of_no_image, r'image_id 12345 is not an image of the file'),
    (wrong_size, r'the file says 65x64 \(width x height\), the image '
     r'.* is 64x64'),
    (misspelled_class, r"the dataset's classes \['car'\] are not category "
     r'names of the file'),
    (categories_reordered, r'listed in the order .* labels in the file'),
    (bad_bbox, r'"bbox" must be \[x, y, width, height\] \(four numbers\), '
     r'got \[1, 2, 3\]'),
    (no_categories, r'no "categories" list'),
]


@pytest.mark.parametrize('fault, message', FAULTS,
                         ids=[f.__name__ for f, _ in FAULTS])
def test_each_fault_is_named(toy, fault, message):
    root, data = toy
    data = copy.deepcopy(data)
    fault(data)
    name = f'{fault.__name__}.json'
    path = write(root, name, data)
    with pytest.raises(CocoCheckError, match=message) as info:
        build(root, f'annotations/{name}')
    # the file is named in the message
    assert path in str(info.value)
    # the function alone reports the same fault
    report = check_coco_file(path, osp.join(root, 'images'), TOY_CLASSES)
    assert any(re.search(message, e) for e in report.errors)


def test_unknown_class_is_an_error_or_skipped(toy):
    """A category the file lists but the config leaves out: an error that
    says how to skip, or skipped with unknown_class='skip' (training on a
    subset of the categories)."""
    root, _ = toy
    subset = ('bottle', 'car')
    with pytest.raises(CocoCheckError, match="is not one of the dataset's 2 "
                       r"classes.*unknown_class='skip'"):
        build(root, 'annotations/train.json', classes=subset)
    dataset = build(root, 'annotations/train.json', classes=subset,
                    unknown_class='skip')
    labels = {x['bbox_label'] for i in range(len(dataset))
              for x in dataset.get_data_info(i)['instances']}
    assert labels <= {0, 1}


def test_many_faults_are_counted(toy):
    root, data = toy
    data = copy.deepcopy(data)
    for ann in data['annotations']:
        ann['category_id'] = 99
    write(root, 'many.json', data)
    # one fault per annotation, and no image left with an object
    n = len(data['annotations']) + 1
    with pytest.raises(CocoCheckError, match=rf'(?s){n} faults in .*and '
                       rf'{n - 10} more') as info:
        build(root, 'annotations/many.json')
    assert str(info.value).count('unknown category id 99') == 10


def test_files_that_cannot_be_read(toy, tmp_path):
    root, data = toy
    with pytest.raises(FileNotFoundError, match='COCO annotation file not '
                       'found: .*absent.json'):
        build(root, 'annotations/absent.json')
    bad = tmp_path / 'bad.json'
    bad.write_text('{"images": [\n  {"id": 1,}\n]}')
    with pytest.raises(CocoCheckError, match=r'bad.json: malformed JSON '
                       r'\(.*line 2 column'):
        read_coco_json(str(bad))
    # a truncated JPEG (no end-of-image marker) is named
    data = copy.deepcopy(data)
    src = osp.join(root, 'images', data['images'][0]['file_name'])
    with open(src, 'rb') as f:
        body = f.read()
    with open(osp.join(root, 'images', 'cut.jpg'), 'wb') as f:
        f.write(body[:len(body) // 2])
    data['images'][0]['file_name'] = 'cut.jpg'
    write(root, 'cut.json', data)
    with pytest.raises(CocoCheckError, match='cut.jpg: (truncated JPEG|'
                       'unreadable image)'):
        build(root, 'annotations/cut.json')
    # check_images=False reads the JSON only
    assert len(build(root, 'annotations/cut.json', check_images=False)) == 8


def test_bad_arguments(toy):
    root, _ = toy
    with pytest.raises(ValueError, match='unknown_class'):
        build(root, 'annotations/train.json', unknown_class='drop')
    with pytest.raises(ValueError, match='check_images'):
        build(root, 'annotations/train.json', check_images='yes')


def test_images_without_objects_are_a_warning(toy):
    root, data = toy
    data = copy.deepcopy(data)
    first = data['images'][0]['id']
    data['annotations'] = [a for a in data['annotations']
                           if a['image_id'] != first]
    path = write(root, 'one_empty.json', data)
    report = check_coco_file(path, osp.join(root, 'images'), TOY_CLASSES)
    assert report.errors == []
    assert len(report.warnings) == 1 and '1 of 8 images' in \
        report.warnings[0]
    assert len(build(root, 'annotations/one_empty.json')) == 8
