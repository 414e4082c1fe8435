"""fit_class_thresholds.py matches the detections to the images of the split
by file name, not by image id (an annotation file may number the same images
otherwise), and refuses detections that miss an image of the split or hold
one it lacks, naming the files and how many."""
import json
import os.path as osp
import pickle
import re

import numpy as np
import pytest
import torch

from rankloss_lab.datasets import TOY_CATEGORY_IDS, make_toy_coco

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
TOOL = 'tools/analysis_tools/fit_class_thresholds.py'

pytestmark = pytest.mark.usefixtures('one_torch_thread')


def page_config(root: str) -> str:
    """docs/own_data.md's Faster R-CNN config on the data under ``root``."""
    with open(osp.join(ROOT, 'docs', 'own_data.md'), encoding='utf-8') as f:
        m = re.search(r'<!-- own-data-config: faster-rcnn -->\n```python\n'
                      r'(.*?)```', f.read(), re.S)
    return m.group(1).replace("data_root = '/data/my_dataset/'",
                              f"data_root = '{root}'")


def detections(images, annotations, rng):
    """``tools/test.py --out`` results for COCO ``images``: every object
    found (score 0.6-0.9), one box on nothing per image (0.2-0.5); each
    image's ``img_id`` and ``img_path`` as given in ``images``."""
    out = []
    for img in images:
        anns = [a for a in annotations if a['image_id'] == img['ann_id']]
        boxes = [[x, y, x + w, y + h] for x, y, w, h in
                 (a['bbox'] for a in anns)] + [[0, 0, 3, 3]]
        labels = [TOY_CATEGORY_IDS.index(a['category_id'])
                  for a in anns] + [0]
        scores = list(rng.uniform(0.6, 0.9, len(anns))) + \
            [rng.uniform(0.2, 0.5)]
        out.append(dict(img_id=img['id'], img_path=img['path'],
                        pred_instances=dict(
                            bboxes=torch.tensor(boxes, dtype=torch.float32),
                            scores=torch.tensor(scores),
                            labels=torch.tensor(labels))))
    return out


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy set in docs/own_data.md's layout, its val file renumbered
    from 1 (the train file numbers from 1 too, the test file runs on), and
    the page's config on it."""
    monkeypatch.chdir(tmp_path)
    root = f'{tmp_path}/data/my_dataset/'
    make_toy_coco(root, splits=(('train', 4), ('val', 6), ('test', 2)),
                  image_size=64)
    ann = osp.join(root, 'annotations', 'val.json')
    with open(ann) as f:
        val = json.load(f)
    new_id = {img['id']: i + 1 for i, img in enumerate(val['images'])}
    for img in val['images']:
        img['ann_id'] = img['id'] = new_id[img['id']]
    for a in val['annotations']:
        a['image_id'] = new_id[a['image_id']]
    with open(ann, 'w') as f:
        json.dump(val, f)
    config = tmp_path / 'my_faster-rcnn.py'
    config.write_text(page_config(root))
    images = [dict(img, path=f'{root}images/{img["file_name"]}')
              for img in val['images']]
    return str(config), root, images, val['annotations']


def fit(tmp_path, load_tool, config, results, name='val.pkl'):
    pkl = tmp_path / name
    pkl.write_bytes(pickle.dumps(results))
    return load_tool(TOOL).main([str(pkl), '--config', config])


def check_fit(result):
    """Every kept threshold lies above the boxes on nothing (<= 0.5) and at
    or below the class's lowest true score (>= 0.6): the detections were
    judged against their own images."""
    kept = [o for o in result['optimal'] if o is not None]
    assert kept
    for o in kept:
        assert 0.5 < o['threshold'] <= 0.9 and o['oLRP'] == 0.0


@pytest.mark.parametrize('ids', ['offset', 'rotated'])
def test_detections_are_matched_by_file_name(toy, tmp_path, load_tool, ids):
    """The detections' ids number the val images otherwise than the val
    file does (as the test split's ids run on: from 5; or each image
    carries another val image's id): the file names match them."""
    config, root, images, anns = toy
    rng = np.random.default_rng(0)
    right = fit(tmp_path, load_tool, config,
                detections(images, anns, rng), 'right.pkl')
    check_fit(right)
    n = len(images)
    renumbered = [dict(img, id=img['id'] + 4 if ids == 'offset' else
                       images[(i + 1) % n]['id'])
                  for i, img in enumerate(images)]
    result = fit(tmp_path, load_tool, config,
                 detections(renumbered, anns, np.random.default_rng(0)))
    check_fit(result)
    assert [o and o['threshold'] for o in result['optimal']] == \
        [o and o['threshold'] for o in right['optimal']]


def test_detections_of_other_files_are_refused(toy, tmp_path, load_tool):
    """The same ids, other file names: no val image has detections."""
    config, root, images, anns = toy
    other = [dict(img, path=f'{root}images/other_{img["file_name"]}')
             for img in images]
    with pytest.raises(SystemExit, match=r'no detections for 6 of the 6 '
                       r'val images \(matched by file name\), e.g. '
                       rf'{re.escape(images[0]["path"])}'):
        fit(tmp_path, load_tool, config,
            detections(other, anns, np.random.default_rng(0)))


def test_detections_of_an_image_not_in_the_split_are_refused(
        toy, tmp_path, load_tool):
    config, root, images, anns = toy
    stray = dict(images[0], path=f'{root}images/000011.jpg')
    with pytest.raises(SystemExit, match=r'1 of its 7 images are not among '
                       r'the 6 val images .*matched by file name\), e.g. '
                       r'.*images/000011\.jpg'):
        fit(tmp_path, load_tool, config,
            detections(images + [stray], anns, np.random.default_rng(0)))


def test_official_pipeline_by_default_and_the_named_options(
        toy, tmp_path, load_tool):
    """By default thresholds at IoU 0, one isotonic map per class and
    thresholds on the calibrated scores are written and judged on test;
    the options give one pooled map at IoU 0.5 and no second threshold."""
    from mmengine.config import Config

    from mmdet.registry import HOOKS
    config, root, images, anns = toy
    rng = np.random.default_rng(0)
    (tmp_path / 'val.pkl').write_bytes(pickle.dumps(
        detections(images, anns, rng)))
    with open(osp.join(root, 'annotations', 'test.json')) as f:
        test = json.load(f)
    test_images = [dict(img, ann_id=img['id'],
                        path=f'{root}images/{img["file_name"]}')
                   for img in test['images']]
    (tmp_path / 'test.pkl').write_bytes(pickle.dumps(
        detections(test_images, test['annotations'], rng)))
    tool = load_tool(TOOL)
    args = ['val.pkl', '--config', config, '--test', 'test.pkl']
    result = tool.main(args + ['--write-config', 'official.py'])
    hook = Config.fromfile('official.py').custom_hooks[-1]
    assert hook.calibration and all(
        c['type'] == 'isotonic' for c in hook.calibration.values())
    assert set(hook.calibrated_thresholds) <= set(hook.calibration)
    HOOKS.build(hook)
    rows = result['test']
    assert set(rows) == {'as given', '0.3 for all', 'per class (val)',
                         'per class + platt', 'per class + isotonic'}
    assert rows['per class (val)']['boxes'] < rows['as given']['boxes']
    old = tool.main(args + ['--iou-thr', '0.5', '--no-tp', 'drop',
                            '--pooled', '--no-threshold-after-calibration',
                            '--write-config', 'old.py'])
    hook = Config.fromfile('old.py').custom_hooks[-1]
    assert hook.calibration['type'] == 'isotonic'
    assert hook.calibrated_thresholds == {}
    assert old['fits']['isotonic']['after'] == [-np.inf] * len(
        old['classes'])
