"""Fault catalogue, VOC data: each fault gives an error naming the file,
field and value, or a documented fallback with a warning naming the item.

Faults are written into a copy of a tiny toy VOC (MMDetection's layout),
read through :class:`~mmdet_rankloss.datasets.CheckedVOCDataset` built as
the quickstart configs build ``VOCDataset``, and through
``tools/misc/check_dataset.py``, which lists every fault of a config's
datasets.
"""
import os
import os.path as osp
import re
import shutil

import pytest
from mmengine.logging import MMLogger

from mmdet.registry import DATASETS
from rankloss_lab.datasets.toy_voc import make_toy_voc
from mmdet_rankloss.utils.voc_check import VOCCheckError, check_voc_item

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
ID = '000001'  # the first trainval image; its first object is a bottle
XML = f'VOC2007/Annotations/{ID}.xml'
JPG = f'VOC2007/JPEGImages/{ID}.jpg'
LIST = 'VOC2007/ImageSets/Main/trainval.txt'


@pytest.fixture(scope='module')
def clean(tmp_path_factory):
    root = tmp_path_factory.mktemp('voc') / 'VOCdevkit'
    make_toy_voc(str(root), num_trainval=3, num_test=1, image_size=64)
    return root


@pytest.fixture
def voc(clean, tmp_path):
    root = tmp_path / 'VOCdevkit'
    shutil.copytree(clean, root)
    return root


def build(root, **kwargs):
    return DATASETS.build(
        dict(
            type='CheckedVOCDataset',
            data_root=str(root) + '/',
            ann_file=LIST,
            data_prefix=dict(sub_data_root='VOC2007/'),
            filter_cfg=dict(filter_empty_gt=True),
            pipeline=[],
            **kwargs))


def edit(root, path, pattern, repl):
    """Replace the first match of ``pattern`` in a text file."""
    text = (root / path).read_text()
    new = re.sub(pattern, repl, text, count=1, flags=re.S)
    assert new != text, pattern
    (root / path).write_text(new)


def set_field(field, value):
    return lambda r: edit(r, XML, rf'<{field}>[^<]*</{field}>',
                          f'<{field}>{value}</{field}>')


def drop(field):
    return lambda r: edit(r, XML, rf'\s*<{field}>.*?</{field}>', '')


def write(path, data):
    return lambda r: (r / path).write_bytes(data)


def cut_jpeg(keep):
    def fault(r):
        data = (r / JPG).read_bytes()
        (r / JPG).write_bytes(data[:keep if keep > 0 else len(data) + keep])
    return fault


def resize_image(r):
    from PIL import Image
    Image.new('RGB', (80, 64)).save(r / JPG)


# (id, fault, exception, regex the message must match)
FAULTS = [
    ('malformed-xml', lambda r: edit(r, XML, '</annotation>', ''),
     VOCCheckError, rf'{ID}\.xml: malformed XML \(no element found'),
    ('xml-not-xml', write(XML, b'\x89PNG\r\n\x1a\n\x00garbage'),
     VOCCheckError, rf'{ID}\.xml: malformed XML'),
    ('xml-missing', lambda r: os.remove(r / XML), FileNotFoundError,
     rf'VOC annotation not found: .*{ID}\.xml'),
    ('size-width-missing', drop('width'), VOCCheckError,
     rf'{ID}\.xml <size>: missing <width>'),
    ('size-height-empty', set_field('height', ''), VOCCheckError,
     rf'{ID}\.xml <size>: missing <height>'),
    ('size-not-a-number', set_field('width', 'sixty'), VOCCheckError,
     rf"{ID}\.xml <size>: <width> is not a number: 'sixty'"),
    ('size-zero', set_field('height', '0'), VOCCheckError,
     rf'{ID}\.xml: <size> must hold positive integers, got width=64, '
     r'height=0'),
    ('size-fractional', set_field('width', '63.5'), VOCCheckError,
     r'positive integers, got width=63\.5'),
    ('size-disagrees-with-image', set_field('width', '100'), VOCCheckError,
     rf'{ID}\.xml: <size> says 100x64 .*{ID}\.jpg is 64x64'),
    ('image-resized', resize_image, VOCCheckError,
     rf'<size> says 64x64 .*{ID}\.jpg is 80x64'),
    ('name-missing', drop('name'), VOCCheckError,
     rf'{ID}\.xml object 0: missing <name>'),
    ('name-empty', set_field('name', ' '), VOCCheckError,
     rf'{ID}\.xml object 0: missing <name>'),
    ('class-unknown', set_field('name', 'dinosaur'), VOCCheckError,
     rf"{ID}\.xml object 0 \('dinosaur'\): unknown class 'dinosaur' .*"
     r"unknown_class='skip'"),
    ('class-case', set_field('name', 'Bottle'), VOCCheckError,
     r"unknown class 'Bottle'"),
    ('bndbox-missing', drop('bndbox'), VOCCheckError,
     rf"{ID}\.xml object 0 \('bottle'\): missing <bndbox>"),
    ('xmin-missing', drop('xmin'), VOCCheckError,
     r"object 0 \('bottle'\) <bndbox>: missing <xmin>"),
    ('ymax-not-a-number', set_field('ymax', 'ten'), VOCCheckError,
     r"<bndbox>: <ymax> is not a number: 'ten'"),
    ('xmin-equals-xmax', set_field('xmin', '14'), VOCCheckError,
     r"object 0 \('bottle'\): empty box, xmin \(14\) >= xmax \(14\)"),
    ('xmin-above-xmax', set_field('xmin', '30'), VOCCheckError,
     r'empty box, xmin \(30\) >= xmax \(14\)'),
    ('ymin-above-ymax', set_field('ymin', '40'), VOCCheckError,
     r'empty box, ymin \(40\) >= ymax \(22\)'),
    ('xmax-outside', set_field('xmax', '80'), VOCCheckError,
     r'box outside the image, \(xmax, ymax\) = \(80, 22\) but the image '
     r'is 64x64'),
    ('ymax-outside', set_field('ymax', '65'), VOCCheckError,
     r'box outside the image, \(xmax, ymax\) = \(14, 65\)'),
    ('xmin-negative', set_field('xmin', '-3'), VOCCheckError,
     r'negative coordinate in \(xmin, ymin\) = \(-3, 16\)'),
    ('difficult-not-binary', set_field('difficult', '2'), VOCCheckError,
     r"object 0 \('bottle'\): <difficult> must be 0 or 1, got '2'"),
    ('image-missing', lambda r: os.remove(r / JPG), VOCCheckError,
     rf'{ID}\.xml: image not found: .*{ID}\.jpg'),
    ('image-not-an-image', write(JPG, b'this is not a jpeg' * 10),
     VOCCheckError, rf'{ID}\.jpg: not a readable image'),
    ('image-empty-file', write(JPG, b''), VOCCheckError,
     rf'{ID}\.jpg: not a readable image'),
    ('jpeg-truncated-half', cut_jpeg(-400), VOCCheckError,
     rf'{ID}\.jpg: truncated JPEG'),
    ('jpeg-truncated-2-bytes', cut_jpeg(-2), VOCCheckError,
     rf'{ID}\.jpg: truncated JPEG'),
    ('jpeg-header-only', cut_jpeg(200), VOCCheckError, rf'{ID}\.jpg: '),
    ('imagesets-empty', write(LIST, b''), VOCCheckError,
     r'the image list .*trainval\.txt is empty'),
    ('imagesets-blank-lines', write(LIST, b'\n\n'), VOCCheckError,
     r'the image list .*trainval\.txt is empty'),
    ('imagesets-blank-line-inside', write(LIST, b'000001\n\n000002\n'),
     VOCCheckError, r'trainval\.txt has blank lines \(line 2\)'),
    ('imagesets-unknown-id', write(LIST, b'000001\n999999\n'),
     FileNotFoundError, r'VOC annotation not found: .*999999\.xml'),
    ('imagesets-missing', lambda r: os.remove(r / LIST), FileNotFoundError,
     r'trainval\.txt'),
]


@pytest.mark.parametrize('fault,error,message', [f[1:] for f in FAULTS],
                         ids=[f[0] for f in FAULTS])
def test_checked_dataset_names_the_fault(voc, fault, error, message):
    build(voc)  # the clean copy loads
    fault(voc)
    with pytest.raises(error, match=message):
        build(voc)


def test_unknown_class_skip_drops_the_object_with_a_warning(voc):
    clean = build(voc).get_data_info(0)
    set_field('name', 'dinosaur')(voc)
    logger = MMLogger.get_current_instance()
    seen = []
    handler = type('H', (__import__('logging').Handler, ), {
        'emit': lambda self, record: seen.append(record.getMessage())
    })()
    logger.addHandler(handler)
    try:
        info = build(voc, unknown_class='skip').get_data_info(0)
    finally:
        logger.removeHandler(handler)
    assert len(info['instances']) == len(clean['instances']) - 1
    assert any(f"{ID}.xml object 0 ('dinosaur'): unknown class" in m
               and m.endswith('skipped') for m in seen), seen


def test_missing_size_falls_back_to_the_image_with_a_warning(voc):
    drop('size')(voc)
    report = check_voc_item(str(voc / XML), str(voc / JPG), ('bottle', ))
    assert report.errors == []
    assert report.size == (64, 64)
    assert any(f'{ID}.xml: no <size>' in w for w in report.warnings)
    info = build(voc).get_data_info(0)
    assert (info['width'], info['height']) == (64, 64)


def test_checked_dataset_equals_mmdet_on_clean_data(voc):
    def infos(type_):
        ds = DATASETS.build(
            dict(type=type_, data_root=str(voc) + '/', ann_file=LIST,
                 data_prefix=dict(sub_data_root='VOC2007/'), pipeline=[]))
        return [ds.get_data_info(i) for i in range(len(ds))]
    checked = infos('CheckedVOCDataset')
    stock = infos('VOCDataset')
    assert checked == stock and len(checked) == 3


@pytest.mark.parametrize('bad', [dict(unknown_class='ignore'),
                                 dict(check_images='yes')])
def test_checked_dataset_arguments(voc, bad):
    with pytest.raises(ValueError, match=repr(list(bad.values())[0])):
        build(voc, **bad)


def run_check(load_tool, config, capsys):
    """``tools/misc/check_dataset.py CONFIG`` in this process: (exit code,
    printed output)."""
    tool = load_tool('tools/misc/check_dataset.py')
    code = tool.main([config])
    return code, capsys.readouterr().out


def quickstart_on(voc, tmp_path, extra=''):
    """A config: the RaMBO quickstart on the test's VOC copy, plus extra."""
    config = tmp_path / 'cfg.py'
    config.write_text(
        "_base_ = 'mmdet_rankloss::quickstart/"
        "faster-rcnn_r18-w32_fpn_rambo_toyvoc.py'\n"
        f"data_root = {str(voc) + '/'!r}\n"
        'train_dataloader = dict(dataset=dict(data_root=data_root))\n'
        'val_dataloader = dict(dataset=dict(data_root=data_root))\n'
        'test_dataloader = val_dataloader\n' + extra)
    return str(config)


def test_check_dataset_tool_lists_every_fault(voc, tmp_path, capsys,
                                              load_tool):
    """Three faults in three items of a config's train and test sets:
    the tool names all three and fails; the clean copy passes."""
    config = quickstart_on(voc, tmp_path)
    code, out = run_check(load_tool, config, capsys)
    assert code == 0, out
    assert 'no faults in 2 datasets (4 items) and the model' in out
    set_field('xmin', '30')(voc)  # 000001, trainval
    edit(voc, 'VOC2007/Annotations/000002.xml', r'<name>[^<]*</name>',
         '<name>dinosaur</name>')
    test_id = (voc / 'VOC2007/ImageSets/Main/test.txt').read_text().split()[0]
    (voc / f'VOC2007/JPEGImages/{test_id}.jpg').write_bytes(b'nope')
    code, out = run_check(load_tool, config, capsys)
    assert code == 1, out
    assert 'empty box, xmin (30) >= xmax (14)' in out
    assert "000002.xml object 0 ('dinosaur'): unknown class" in out
    assert f'{test_id}.jpg: not a readable image' in out
    assert '3 faults' in out


def test_check_dataset_tool_lists_a_misfit_loss_with_the_data(
        voc, tmp_path, capsys, load_tool):
    """A loss its head cannot serve fails the model build with HeadFitError;
    the tool lists it as a fault beside the data's instead of a traceback."""
    config = quickstart_on(
        voc, tmp_path, 'model = dict(roi_head=dict(bbox_head=dict(loss_cls='
        "dict(_delete_=True, type='FastAPLoss'))))\n")
    set_field('xmin', '30')(voc)
    code, out = run_check(load_tool, config, capsys)
    assert code == 1, out
    assert 'model: 1 faults' in out
    assert 'FAULT model.roi_head.bbox_head.loss_cls (FastAPLoss in ' \
        'Shared2FCBBoxHead): forward(' in out, out
    assert 'empty box, xmin (30) >= xmax (14)' in out
    assert '2 faults' in out
