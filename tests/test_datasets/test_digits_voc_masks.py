"""DigitsVOC's instance masks: each mask is the digit's drawn ink, the
detection files do not change, and the COCO twin is read and scored by
pycocotools and MMDetection (``CocoDataset``, ``CocoMetric``)."""
import json
import os.path as osp
import re
import shlex
from xml.etree import ElementTree as ET

import numpy as np
import pytest
import torch

from helpers import read_tree  # tests/ on sys.path
from rankloss_lab.datasets import digits_voc as D
from rankloss_lab.datasets.voc_writer import voc_palette

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
SMALL = (('train', 4), ('val', 3), ('test', 3))
#: what ``masks=True`` adds (paths relative to the root)
MASK_FILES = re.compile(r'^(VOC2007/(SegmentationObject|SegmentationClass)/'
                        r'\w+\.png|VOC2007/ImageSets/Segmentation/\w+\.txt|'
                        r'annotations/instances_\w+\.json)$')


@pytest.fixture(scope='module')
def both(tmp_path_factory):
    """The same DigitsVOC written without and with masks."""
    base = tmp_path_factory.mktemp('masks')
    plain, masked = str(base / 'plain'), str(base / 'masked')
    D.make_digits_voc(plain, splits=SMALL, seed=3)
    D.make_digits_voc(masked, splits=SMALL, seed=3, masks=True)
    return plain, masked


def test_masks_are_the_drawn_ink(monkeypatch):
    """Each object's mask, replayed from what the painter drew: the pixels
    where the digit's alpha is at least a quarter of its contrast and no
    later digit's is; where nothing is drawn over it, the image shows the
    digit's colour blended over what was there with that alpha."""
    drawn = []  # (object, alpha, colour, canvas before) per painted digit
    state = dict(digit=False)
    real_blend, real_paint = D.blend_mask, D._paint_digit

    def blend(img, mask, x0, y0, colour):
        before = img.copy()
        painted = real_blend(img, mask, x0, y0, colour)
        if state['digit']:
            state.update(alpha=painted.copy(), colour=np.array(colour),
                         before=before)
        return painted

    def paint(rng, img, digit, name):
        state['digit'] = True
        out = real_paint(rng, img, digit, name)
        state['digit'] = False
        if out is not None:
            drawn.append((out[0], state['alpha'], state['colour'],
                          state['before']))
        return out

    monkeypatch.setattr(D, 'blend_mask', blend)
    monkeypatch.setattr(D, '_paint_digit', paint)
    pools = D._digit_pools(0)['train']
    checked = 0
    for seed in range(6):
        drawn.clear()
        img, objects = D._sample_image(np.random.default_rng(seed), 128,
                                       pools, D._class_probs())
        inks = [alpha > 0.25 * obj['contrast'] for obj, alpha, *_ in drawn]
        for obj in objects:
            j = next(i for i, (o, *_) in enumerate(drawn) if o is obj)
            later = np.zeros((128, 128), bool)
            for ink in inks[j + 1:]:
                later |= ink
            expected = inks[j] & ~later
            assert obj['mask'].dtype == bool
            assert np.array_equal(obj['mask'], expected)
            rows = np.flatnonzero(expected.any(1))
            cols = np.flatnonzero(expected.any(0))
            assert obj['box'] == (cols[0], rows[0], cols[-1], rows[-1])
            untouched = np.ones((128, 128), bool)
            for _, alpha, *_ in drawn[j + 1:]:
                untouched &= alpha == 0
            _, alpha, colour, before = drawn[j]
            shown = obj['mask'] & untouched
            if shown.any():
                checked += 1
                a = alpha[shown][:, None]
                blended = (1 - a) * before[shown] + a * colour
                assert (a > 0.25 * obj['contrast']).all()
                assert np.abs(img[shown] - np.clip(blended, 0, 255)).max() \
                    <= 0.5 + 1e-9
        masks = [o['mask'] for o in objects]
        assert (np.sum(masks, 0) <= 1).all()  # no pixel in two masks
    assert checked >= 10


def test_detection_files_are_unchanged(both):
    """``masks=True`` adds files and changes none."""
    plain, masked = (read_tree(root) for root in both)
    for rel, data in plain.items():
        assert masked.get(rel) == data, rel
    added = sorted(set(masked) - set(plain))
    assert added and all(MASK_FILES.match(rel) for rel in added), added
    for split in ('train', 'val', 'test'):
        assert f'annotations/instances_{split}.json' in added
        assert f'VOC2007/ImageSets/Segmentation/{split}.txt' in added
    assert 'VOC2007/ImageSets/Segmentation/trainval.txt' in added


def test_coco_twin_agrees_with_the_voc_files(both):
    """pycocotools reads every split; each annotation is its XML object
    (class, box, difficult as iscrowd) and its RLE decodes to the object's
    pixels in the SegmentationObject PNG."""
    from PIL import Image
    from pycocotools import mask as mask_utils
    from pycocotools.coco import COCO
    root = both[1]
    year = osp.join(root, 'VOC2007')
    for split, count in SMALL:
        coco = COCO(osp.join(root, 'annotations', f'instances_{split}.json'))
        assert [c['name'] for c in coco.loadCats(coco.getCatIds())] == \
            list(D.DIGIT_CLASSES)
        assert len(coco.getImgIds()) == count
        for image in coco.loadImgs(coco.getImgIds()):
            img_id = image['file_name'][:-4]
            assert osp.isfile(osp.join(year, 'JPEGImages',
                                       image['file_name']))
            objects = ET.parse(osp.join(year, 'Annotations',
                                        f'{img_id}.xml')).findall('object')
            anns = coco.loadAnns(coco.getAnnIds(imgIds=image['id'],
                                                iscrowd=None))
            assert len(anns) == len(objects)
            instance = np.asarray(Image.open(osp.join(
                year, 'SegmentationObject', f'{img_id}.png')))
            semantic = np.asarray(Image.open(osp.join(
                year, 'SegmentationClass', f'{img_id}.png')))
            for index, (ann, obj) in enumerate(zip(anns, objects), 1):
                name = obj.findtext('name')
                assert coco.loadCats(ann['category_id'])[0]['name'] == name
                assert ann['iscrowd'] == int(obj.findtext('difficult'))
                xmin, ymin, xmax, ymax = (
                    int(obj.findtext(f'bndbox/{k}')) - 1
                    for k in ('xmin', 'ymin', 'xmax', 'ymax'))
                assert ann['bbox'] == [xmin, ymin, xmax - xmin + 1,
                                       ymax - ymin + 1]
                mask = mask_utils.decode(ann['segmentation']).astype(bool)
                assert np.array_equal(mask, instance == index)
                assert (semantic[mask] == D.DIGIT_CLASSES.index(name) +
                        1).all()
                assert ann['area'] == mask.sum() == coco.annToMask(ann).sum()
                rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(
                    mask.any(0))
                assert (cols[0], rows[0], cols[-1], rows[-1]) == (
                    xmin, ymin, xmax, ymax)
            assert instance.max() == len(objects)


def test_mmdetection_reads_and_scores_the_twin(both):
    """``CocoDataset`` loads the masks (difficult digits ignored);
    ``CocoMetric`` scores the ground truth fed back as predictions at box
    and mask AP 1."""
    from mmengine.registry import init_default_scope
    from mmdet.datasets import CocoDataset
    from mmdet.evaluation import CocoMetric
    init_default_scope('mmdet')
    root = both[1]
    ann_file = osp.join(root, 'annotations', 'instances_val.json')
    dataset = CocoDataset(
        data_root=root, ann_file='annotations/instances_val.json',
        data_prefix=dict(img='VOC2007/JPEGImages/'),
        metainfo=dict(classes=D.DIGIT_CLASSES), test_mode=True,
        pipeline=[dict(type='LoadImageFromFile'),
                  dict(type='LoadAnnotations', with_bbox=True,
                       with_mask=True),
                  dict(type='PackDetInputs')])
    metric = CocoMetric(ann_file=ann_file, metric=['bbox', 'segm'])
    metric.dataset_meta = dataset.metainfo
    with open(ann_file) as f:
        crowd = sum(a['iscrowd'] for a in json.load(f)['annotations'])
    ignored = 0
    for i in range(len(dataset)):
        sample = dataset[i]['data_samples']
        gt = sample.gt_instances
        ignored += len(sample.ignored_instances)
        masks = torch.from_numpy(gt.masks.masks).bool()
        assert masks.any((1, 2)).all()
        metric.process({}, [dict(
            img_id=sample.img_id, ori_shape=sample.ori_shape,
            pred_instances=dict(bboxes=gt.bboxes.tensor,
                                scores=torch.ones(len(gt)),
                                labels=gt.labels, masks=masks))])
    assert ignored == crowd > 0
    results = metric.compute_metrics(metric.results)
    assert results['bbox_mAP'] == pytest.approx(1)
    assert results['segm_mAP'] == pytest.approx(1)


def test_fresh_split_with_masks(tmp_path):
    root = str(tmp_path)
    D.make_fresh_test_split(root, 'confirm', 3, splits=SMALL, masks=True)
    with open(osp.join(root, 'annotations', 'instances_confirm.json')) as f:
        data = json.load(f)
    assert [i['file_name'] for i in data['images']] == [
        f'confirm_{i:05d}.jpg' for i in range(3)]
    with open(osp.join(root, 'VOC2007', 'ImageSets', 'Segmentation',
                       'confirm.txt')) as f:
        assert f.read().split() == [f'confirm_{i:05d}' for i in range(3)]
    plain = str(tmp_path / 'plain')
    D.make_fresh_test_split(plain, 'confirm', 3, splits=SMALL)
    files = read_tree(root)
    for rel, data in read_tree(plain).items():
        assert files[rel] == data, rel


@pytest.mark.parametrize('call', ['make_digits_voc', 'make_fresh_test_split'])
def test_masks_must_be_a_flag(tmp_path, call):
    with pytest.raises(ValueError, match='masks must be'):
        getattr(D, call)(str(tmp_path), masks='yes')


def test_voc_palette_is_vocs():
    palette = np.array(voc_palette()).reshape(256, 3)
    assert palette[0].tolist() == [0, 0, 0]
    assert palette[1].tolist() == [128, 0, 0]  # aeroplane
    assert palette[2].tolist() == [0, 128, 0]  # bicycle
    assert palette[3].tolist() == [128, 128, 0]
    assert palette[15].tolist() == [192, 128, 128]  # person
    assert palette[255].tolist() == [224, 224, 192]  # void


def test_the_documented_command_writes_the_configs_data(load_tool,
                                                        monkeypatch):
    """The command of docs/instance_segmentation.md, as written, asks for
    masks under the folder the DigitsVOC Mask R-CNN configs read."""
    from mmengine.config import Config
    with open(osp.join(ROOT, 'docs', 'instance_segmentation.md')) as f:
        lines = [line for line in f.read().splitlines()
                 if 'make_digits_voc.py' in line and line.startswith('python')]
    assert len(lines) == 1
    words = shlex.split(lines[0])
    tool = load_tool(words[1])
    seen = {}
    monkeypatch.setattr(tool, 'make_digits_voc',
                        lambda root, **kw: seen.update(kw, root=root) or {})
    tool.main(words[2:])
    assert seen['masks'] is True
    cfg = Config.fromfile(osp.join(
        ROOT, 'configs', 'mask_rcnn', '_base_',
        'mask-rcnn_r18-w32_fpn_16e_digitsvoc.py'))
    assert osp.normpath(seen['root']) == osp.normpath(
        cfg.train_dataloader.dataset.data_root)
    assert dict(seen['splits']) == dict(D.DEFAULT_SPLITS)
