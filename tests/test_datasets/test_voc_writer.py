"""The VOC writer: files in the layout MMDetection's VOCDataset reads."""
import os.path as osp
from xml.etree import ElementTree as ET

import numpy as np
from PIL import Image

from rankloss_lab.datasets.voc_writer import (add_class_flags,
                                                make_voc_dirs,
                                                write_image_sets,
                                                write_voc_item)

OBJECTS = [
    dict(name='car', box=(0, 2, 9, 7), difficult=False, truncated=True),
    dict(name='sheep', box=(3, 3, 5, 6), difficult=True),
]


def test_item_writes_the_image_and_a_one_based_annotation(tmp_path):
    year_root = str(tmp_path / 'VOC2007')
    make_voc_dirs(year_root)
    img = np.full((16, 16, 3), 128, dtype=np.uint8)
    write_voc_item(year_root, 'a', img, OBJECTS, 'test db', quality=95)
    with Image.open(osp.join(year_root, 'JPEGImages', 'a.jpg')) as jpg:
        assert jpg.size == (16, 16) and jpg.format == 'JPEG'
    root = ET.parse(osp.join(year_root, 'Annotations', 'a.xml')).getroot()
    assert root.findtext('folder') == 'VOC2007'
    assert root.findtext('filename') == 'a.jpg'
    assert root.findtext('source/database') == 'test db'
    assert root.findtext('size/width') == root.findtext('size/height') == '16'
    objects = root.findall('object')
    assert [o.findtext('name') for o in objects] == ['car', 'sheep']
    assert [o.findtext('truncated') for o in objects] == ['1', '0']
    assert [o.findtext('difficult') for o in objects] == ['0', '1']
    box = [objects[0].findtext(f'bndbox/{k}')
           for k in ('xmin', 'ymin', 'xmax', 'ymax')]
    assert box == ['1', '3', '10', '8']


def test_image_sets_hold_the_ids_and_the_class_flags(tmp_path):
    year_root = str(tmp_path / 'VOC2007')
    make_voc_dirs(year_root)
    per_class = {'car': [], 'sheep': [], 'bottle': []}
    add_class_flags(per_class, 'a', OBJECTS)
    add_class_flags(per_class, 'b', OBJECTS[:1])
    write_image_sets(year_root, 'test', ['a', 'b'], per_class)
    main = osp.join(year_root, 'ImageSets', 'Main')

    def read(name):
        with open(osp.join(main, name), encoding='utf-8') as f:
            return f.read()

    assert read('test.txt') == 'a\nb\n'
    assert read('car_test.txt') == 'a  1\nb  1\n'
    assert read('sheep_test.txt') == 'a  0\nb -1\n'  # only difficult: 0
    assert read('bottle_test.txt') == 'a -1\nb -1\n'
