"""The calibration fit reads tools/test.py's detections and the ground truth
of any config's val split (COCO or VOC format) or of VOC XML files, refuses
images the model trained on or is reported on, and prints or writes the
config line that stores the fit."""
import os.path as osp
import pickle
import re

import numpy as np
import pytest
import torch

from mmdet_rankloss.evaluation.voc_files import load_voc_ground_truth
from rankloss_lab.datasets.digits_voc import DIGIT_CLASSES, make_digits_voc

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
QUICK_RAMBO = osp.join(ROOT, 'configs', 'quickstart',
                       'faster-rcnn_r18-w32_fpn_rambo_toyvoc.py')


@pytest.fixture
def val_detections(tmp_path):
    """A DigitsVOC val split and detections of it: every object found with
    a high score, plus two low-score misses per image."""
    root = str(tmp_path / 'VOCdevkit')
    make_digits_voc(root, splits=(('train', 1), ('val', 6), ('test', 1)))
    ids, gts = load_voc_ground_truth(root, 'val', DIGIT_CLASSES)
    rng = np.random.default_rng(0)
    results = []
    for img_id, gt in zip(ids, gts):
        # every object found with a high score, plus two low-score misses
        boxes = np.concatenate([gt['bboxes'], [[0, 0, 5, 5], [9, 9, 15,
                                                                15]]])
        scores = np.concatenate([rng.uniform(0.6, 0.7, len(gt['labels'])),
                                 rng.uniform(0.3, 0.5, 2)])
        labels = np.concatenate([gt['labels'], [0, 1]])
        results.append(dict(
            img_path=f'/x/JPEGImages/{img_id}.jpg',
            pred_instances=dict(bboxes=torch.as_tensor(boxes),
                                scores=torch.as_tensor(scores),
                                labels=torch.as_tensor(labels))))
    pkl = tmp_path / 'val.pkl'
    pkl.write_bytes(pickle.dumps(results))
    return str(pkl), root


def test_fit_from_detections(val_detections, capsys, load_tool):
    tool = load_tool('tools/analysis_tools/fit_score_calibration.py')
    pkl, root = val_detections
    a, b = tool.main([pkl, '--data-root', root])
    out = capsys.readouterr().out
    assert a > 0 and 'loss_cls.calibration="(' in out
    assert 'as trained: D-ECE' in out and 'Platt: D-ECE' in out
    with pytest.raises(SystemExit, match='no detections'):
        tool.main([pkl, '--data-root', root, '--split', 'test'])


def test_detections_of_an_image_not_in_the_split_are_refused(
        val_detections, tmp_path, load_tool):
    tool = load_tool('tools/analysis_tools/fit_score_calibration.py')
    pkl, root = val_detections
    with open(pkl, 'rb') as f:
        results = pickle.load(f)
    stray = tmp_path / 'stray.pkl'
    stray.write_bytes(pickle.dumps(
        results + [dict(results[0], img_path='/x/JPEGImages/999999.jpg')]))
    with pytest.raises(SystemExit, match='1 of its 7 images are not among '
                       'the 6 val images, e.g. 999999'):
        tool.main([str(stray), '--data-root', root])


def test_write_into_a_config_line(val_detections, tmp_path, load_tool):
    """In place: the one ``score_calibration = ...`` line is replaced and
    the config then carries the fit on its RaMBO loss."""
    from mmengine.config import Config
    tool = load_tool('tools/analysis_tools/fit_score_calibration.py')
    pkl, root = val_detections
    config = tmp_path / 'rambo.py'
    text = open(QUICK_RAMBO).read().replace(
        "_base_ = './", f"_base_ = '{osp.dirname(QUICK_RAMBO)}/")
    config.write_text(text)
    a, b = tool.main([pkl, '--data-root', root, '--write-config',
                      str(config)])
    written = config.read_text()
    assert written.count('score_calibration = (') == 1
    assert written.replace(
        f'score_calibration = ({a:.4f}, {b:.4f})', 'X') == \
        tool.CALIBRATION_LINE.sub('X', text)
    loss = Config.fromfile(str(config)).model.roi_head.bbox_head.loss_cls
    assert tuple(loss.calibration) == (round(a, 4), round(b, 4))
    plain = tmp_path / 'plain.py'
    plain.write_text('model = dict()\n')
    with pytest.raises(SystemExit, match='score_calibration'):
        tool.main([pkl, '--data-root', root, '--write-config', str(plain)])


@pytest.mark.parametrize('base, path', [
    ('configs/rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py',
     ['roi_head', 'bbox_head', 'loss_cls']),
    ('configs/dense/retinanet/retinanet_r18-w32_fpn_rambo_16e_digitsvoc.py',
     ['bbox_head', 'loss_cls']),
])
def test_write_a_new_config_on_a_base(val_detections, tmp_path, load_tool,
                                      base, path):
    from mmengine.config import Config
    tool = load_tool('tools/analysis_tools/fit_score_calibration.py')
    pkl, root = val_detections
    out = tmp_path / 'calibrated.py'
    a, b = tool.main([pkl, '--data-root', root, '--write-config', str(out),
                      '--base', osp.join(ROOT, base)])
    cfg, plain = Config.fromfile(str(out)), Config.fromfile(
        osp.join(ROOT, base))
    node, plain_node = cfg.model, plain.model
    for key in path:
        node, plain_node = node[key], plain_node[key]
    assert node.type == 'RaMBOAPLoss'
    assert tuple(node.calibration) == (round(a, 4), round(b, 4))
    # nothing else changes
    node.pop('calibration')
    plain_node.pop('calibration', None)
    assert cfg.model == plain.model
    with pytest.raises(SystemExit, match='no calibration to write: its '
                       'test scores are already the CrossEntropyLoss'):
        tool.main([pkl, '--data-root', root, '--write-config',
                   str(tmp_path / 'x.py'), '--base', osp.join(
                       ROOT, 'configs', 'rambo',
                       'faster-rcnn_r50_fpn_rambo-bce_1x_voc0712.py')])


# --- any config: ground truth and classes from its val_dataloader ---------

DIGITS_RAMBO = osp.join(ROOT, 'configs', 'digitsvoc',
                        'faster-rcnn_r18-w32_fpn_rambo_16e_digitsvoc.py')
RAMBO_BASE = ("_base_ = 'mmdet_rankloss::digitsvoc/"
              "faster-rcnn_r18-w32_fpn_rambo_16e_digitsvoc.py'")


def own_data_config(root: str) -> str:
    """docs/own_data.md's Faster R-CNN config on the RaMBO-only recipe (the
    page's section 5: a model whose scores need a calibration), its data
    in ``root``."""
    with open(osp.join(ROOT, 'docs', 'own_data.md'), encoding='utf-8') as f:
        text = f.read()
    m = re.search(r'<!-- own-data-config: faster-rcnn -->\n```python\n'
                  r'(.*?)```', text, re.S)
    code, n = re.subn(r'^_base_ = .*$', RAMBO_BASE, m.group(1), count=1,
                      flags=re.M)
    assert n == 1
    return code.replace("data_root = '/data/my_dataset/'",
                        f"data_root = '{root}'")


def detections_of(gts, rng):
    """Every object found with a high score, plus two low-score misses,
    as ``tools/test.py --out`` stores them (``img_id``, ``img_path``)."""
    results = []
    for img_id, img_path, boxes, labels in gts:
        results.append(dict(
            img_id=img_id, img_path=img_path,
            pred_instances=dict(
                bboxes=torch.as_tensor(np.concatenate(
                    [boxes, [[0, 0, 5, 5], [9, 9, 15, 15]]])),
                scores=torch.as_tensor(np.concatenate(
                    [rng.uniform(0.6, 0.7, len(labels)),
                     rng.uniform(0.3, 0.5, 2)])),
                labels=torch.as_tensor(np.concatenate([labels, [0, 1]])))))
    return results


@pytest.fixture
def coco_val(tmp_path, monkeypatch):
    """A COCO-format set in docs/own_data.md's layout, the page's config on
    the RaMBO-only recipe, and detections of its val split."""
    import json

    from rankloss_lab.datasets import TOY_CATEGORY_IDS, make_toy_coco
    monkeypatch.chdir(tmp_path)
    make_toy_coco('data/my_dataset', splits=(('train', 4), ('val', 6),
                                             ('test', 2)), image_size=64)
    config = tmp_path / 'my_rambo.py'
    config.write_text(own_data_config(f'{tmp_path}/data/my_dataset/'))
    with open('data/my_dataset/annotations/val.json') as f:
        val = json.load(f)
    gts = []
    for img in val['images']:
        anns = [a for a in val['annotations'] if a['image_id'] == img['id']]
        boxes = np.array([[x, y, x + w, y + h] for x, y, w, h in
                          (a['bbox'] for a in anns)], float).reshape(-1, 4)
        labels = np.array([TOY_CATEGORY_IDS.index(a['category_id'])
                           for a in anns], int)
        gts.append((img['id'], f'data/my_dataset/images/{img["file_name"]}',
                    boxes, labels))
    results = detections_of(gts, np.random.default_rng(0))
    pkl = tmp_path / 'val.pkl'
    pkl.write_bytes(pickle.dumps(results))
    return str(pkl), str(config), results


def test_fit_from_a_coco_config(coco_val, capsys, load_tool):
    tool = load_tool('tools/analysis_tools/fit_score_calibration.py')
    pkl, config, _ = coco_val
    a, b = tool.main([pkl, '--config', config])
    out = capsys.readouterr().out
    assert a > 0
    assert '(CheckedCocoDataset annotations/val.json)' in out
    assert 'as trained: D-ECE' in out and 'Platt: D-ECE' in out
    assert 'model.roi_head.bbox_head.loss_cls.calibration="(' in out


def test_write_config_from_a_coco_config(coco_val, tmp_path, load_tool):
    """``--write-config OUT.py`` alone: OUT.py inherits ``--config`` and
    sets the calibration of its RaMBO loss, nothing else."""
    from mmengine.config import Config
    tool = load_tool('tools/analysis_tools/fit_score_calibration.py')
    pkl, config, _ = coco_val
    out = tmp_path / 'my_rambo_calibrated.py'
    a, b = tool.main([pkl, '--config', config, '--write-config', str(out)])
    cfg, plain = Config.fromfile(str(out)), Config.fromfile(config)
    loss = cfg.model.roi_head.bbox_head.loss_cls
    assert loss.type == 'RaMBOAPLoss'
    assert tuple(loss.calibration) == (round(a, 4), round(b, 4))
    loss.pop('calibration')
    plain.model.roi_head.bbox_head.loss_cls.pop('calibration', None)
    assert cfg.model == plain.model
    assert cfg.val_dataloader == plain.val_dataloader


@pytest.mark.parametrize('split, message', [
    ('train', 'also read by its train_dataloader.*the model trained on '
     'them'),
    ('test', 'also read by its test_dataloader.*the split you report'),
])
def test_training_and_test_images_are_refused(coco_val, load_tool, split,
                                              message):
    tool = load_tool('tools/analysis_tools/fit_score_calibration.py')
    pkl, config, _ = coco_val
    with pytest.raises(SystemExit, match=message):
        tool.main([pkl, '--config', config, '--cfg-options',
                   f'val_dataloader.dataset.ann_file=annotations/{split}'
                   '.json'])


@pytest.mark.slow
def test_detections_are_matched_by_id_or_file_name(coco_val, tmp_path,
                                                   load_tool):
    tool = load_tool('tools/analysis_tools/fit_score_calibration.py')
    pkl, config, results = coco_val
    fit = tool.main([pkl, '--config', config])
    # by file name, whatever the ids; by img_id only without file names
    for name, change in (('named', dict(img_id=None)),
                         ('numbered', dict(img_path=None))):
        other = tmp_path / f'{name}.pkl'
        other.write_bytes(pickle.dumps([dict(r, **change) for r in results]))
        assert tool.main([str(other), '--config', config]) == fit
    short = tmp_path / 'short.pkl'
    short.write_bytes(pickle.dumps(results[1:]))
    with pytest.raises(SystemExit, match='no detections for 1 of the 6 val '
                       'images .matched by file name'):
        tool.main([str(short), '--config', config])


def test_a_voc_config_gives_the_voc_only_fit(val_detections, load_tool):
    """The DigitsVOC RaMBO config read through --config (its VOC val split)
    gives the same fit as the VOC-only form."""
    tool = load_tool('tools/analysis_tools/fit_score_calibration.py')
    pkl, root = val_detections
    voc_only = tool.main([pkl, '--data-root', root])
    root += '/'
    options = [f'{split}_dataloader.dataset.data_root={root}'
               for split in ('val', 'test')] + [
                   f'train_dataloader.dataset.data_root={root}']
    a, b = tool.main([pkl, '--config', DIGITS_RAMBO, '--cfg-options'] +
                     options)
    assert (a, b) == pytest.approx(voc_only, abs=1e-9)


def test_the_two_forms_exclude_each_other(val_detections, load_tool):
    tool = load_tool('tools/analysis_tools/fit_score_calibration.py')
    pkl, root = val_detections
    with pytest.raises(SystemExit):
        tool.main([pkl, '--data-root', root, '--config', DIGITS_RAMBO])
    with pytest.raises(SystemExit):
        tool.main([pkl])
    with pytest.raises(SystemExit):
        tool.main([pkl, '--data-root', root, '--cfg-options', 'a=1'])


@pytest.mark.slow
def test_the_voc_hold_out_of_the_guide(tmp_path, monkeypatch, load_tool):
    """docs/own_data.md: MMDetection's VOC07+12 config validates on VOC2007
    test and trains on VOC2007 trainval, val included, so neither split may
    be fitted on; the page's config that trains without VOC2007 val can."""
    from mmdet.datasets import VOCDataset

    from rankloss_lab.datasets.toy_voc import make_toy_voc
    tool = load_tool('tools/analysis_tools/fit_score_calibration.py')
    monkeypatch.chdir(tmp_path)
    root = 'data/VOCdevkit/'
    make_toy_voc(root, num_trainval=3, num_test=2, with_voc2012=True,
                 num_val=3, image_size=64)
    # as in the real VOC2007: trainval = train + val
    main = osp.join(root, 'VOC2007', 'ImageSets', 'Main')
    train = open(osp.join(main, 'trainval.txt')).read()
    val = open(osp.join(main, 'val.txt')).read()
    open(osp.join(main, 'train.txt'), 'w').write(train)
    open(osp.join(main, 'trainval.txt'), 'w').write(train + val)
    ids, gts = load_voc_ground_truth(root, 'val',
                                     VOCDataset.METAINFO['classes'])
    pkl = tmp_path / 'val.pkl'
    pkl.write_bytes(pickle.dumps(detections_of(
        [(i, f'{root}VOC2007/JPEGImages/{i}.jpg', g['bboxes'], g['labels'])
         for i, g in zip(ids, gts)], np.random.default_rng(0))))
    plain = osp.join(ROOT, 'configs', 'rambo',
                     'faster-rcnn_r50_fpn_rambo_1x_voc0712.py')
    on_val = ['--cfg-options',
              'val_dataloader.dataset.ann_file=VOC2007/ImageSets/Main/val.txt']
    with pytest.raises(SystemExit, match='test_dataloader'):
        tool.main([str(pkl), '--config', plain])
    with pytest.raises(SystemExit, match='3 of the 3 calibration images .*'
                       'train_dataloader'):
        tool.main([str(pkl), '--config', plain] + on_val)
    with open(osp.join(ROOT, 'docs', 'own_data.md'), encoding='utf-8') as f:
        block = re.search(r'<!-- own-data-voc-holdout -->\n```python\n'
                          r'(.*?)```', f.read(), re.S).group(1)
    held_out = tmp_path / 'held_out.py'
    held_out.write_text(block)
    a, b = tool.main([str(pkl), '--config', str(held_out)])
    assert a > 0


# --- what the tool prints for each head: only fixes that build -------------

HEADS = [
    # (config, what the tool must say)
    ('configs/digitsvoc/faster-rcnn_r18-w32_fpn_rambo_16e_digitsvoc.py',
     'store'),
    ('configs/dense/retinanet/retinanet_r18-w32_fpn_rambo_16e_digitsvoc.py',
     'store'),
    ('configs/digitsvoc/faster-rcnn_r18-w32_fpn_ce_16e_digitsvoc.py',
     'probability'),
    ('configs/digitsvoc/faster-rcnn_r18-w32_fpn_rambo-bce_16e_digitsvoc.py',
     'probability'),
    ('configs/dense/retinanet/retinanet_r18-w32_fpn_focal_16e_digitsvoc.py',
     'probability'),
    ('configs/dense/retinanet/'
     'retinanet_r18-w32_fpn_rambo-focal_16e_digitsvoc.py', 'probability'),
    # ATSS multiplies the class probability by the centerness
    ('configs/dense/atss/atss_r18-w32_fpn_focal_16e_digitsvoc.py', 'hook'),
    ('configs/dense/atss/atss_r18-w32_fpn_rambo-focal_16e_digitsvoc.py',
     'hook'),
    ('configs/dense/atss/atss_r18-w32_fpn_rambo_16e_digitsvoc.py', 'hook'),
    # ranking-trained losses without a calibration of their own
    ('configs/digitsvoc/faster-rcnn_r18-w32_fpn_rank-sort_16e_digitsvoc.py',
     'hook'),
    ('configs/dense/atss/atss_r18-w32_fpn_rank-sort_16e_digitsvoc.py',
     'hook'),
    ('configs/dense/atss/atss_r18-w32_fpn_alrp_16e_digitsvoc.py', 'hook'),
    ('configs/dense/retinanet/retinanet_r18-w32_fpn_rank-sort_16e_digitsvoc'
     '.py', 'hook'),
    ('configs/dense/retinanet/retinanet_r18-w32_fpn_alrp_16e_digitsvoc.py',
     'hook'),
]


@pytest.mark.parametrize('config, kind', HEADS,
                         ids=[osp.basename(c) for c, _ in HEADS])
def test_the_advice_for_each_head_builds(config, kind, load_tool):
    """A printed --cfg-options is merged as tools/test.py merges it and the
    model is built with the calibration in its loss; a model that needs
    none gets no option; every other gets the hook's tool, whose hook
    builds."""
    import shlex

    from mmdet.registry import HOOKS, MODELS
    from mmengine.config import Config

    # tools/test.py's --cfg-options parsing (DictAction), as the docs test
    command_options = load_tool(
        'tests/test_docs/test_doc_snippets.py').command_options
    tool = load_tool('tools/analysis_tools/fit_score_calibration.py')
    text = tool.advice_text(osp.join(ROOT, config), 1.25, -0.5)
    assert tool.score_advice(
        Config.fromfile(osp.join(ROOT, config)).model).kind == kind
    if kind == 'store':
        line = next(x for x in text.splitlines() if '--cfg-options' in x)
        cfg = Config.fromfile(osp.join(ROOT, config))
        cfg.merge_from_dict(command_options(shlex.split(line)))
        model = MODELS.build(cfg.model)
        head = getattr(model, 'roi_head', model)
        head = getattr(head, 'bbox_head')
        assert head.loss_cls.calibration == (1.25, -0.5)
        return
    assert '--cfg-options' not in text
    assert 'fit_class_thresholds.py' in text
    if kind == 'probability':
        assert 'needs no calibration' in text
    else:
        assert 'ClassScoreThresholdHook' in text
        HOOKS.build(dict(type='ClassScoreThresholdHook',
                         thresholds=dict(zero=0.5)))


def test_the_mix_gets_no_calibration_and_no_traceback(coco_val, tmp_path,
                                                       load_tool, capsys):
    """The own-data page's Faster R-CNN (the mix): the fit is measured,
    no option is printed, and --write-config stops with a sentence."""
    tool = load_tool('tools/analysis_tools/fit_score_calibration.py')
    pkl, config, _ = coco_val
    mix = tmp_path / 'my_mix.py'
    mix.write_text(open(config).read().replace(
        'faster-rcnn_r18-w32_fpn_rambo_16e', 'faster-rcnn_r18-w32_fpn_'
        'rambo-bce_16e'))
    tool.main([pkl, '--config', str(mix)])
    out = capsys.readouterr().out
    assert 'as trained: D-ECE' in out and 'needs no calibration' in out
    assert 'calibration="(' not in out
    with pytest.raises(SystemExit, match='no calibration to write'):
        tool.main([pkl, '--config', str(mix), '--write-config',
                   str(tmp_path / 'out.py')])
