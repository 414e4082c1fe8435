"""The calibration fit reads tools/test.py's detections and the VOC XML,
and prints the config line that stores the fit."""
import os.path as osp
import pickle

import numpy as np
import pytest
import torch

from mmdet_rankloss.evaluation.voc_files import load_voc_ground_truth
from mmdet_rankloss.datasets.digits_voc import DIGIT_CLASSES, make_digits_voc

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
    with pytest.raises(ValueError, match='score_calibration'):
        tool.main([pkl, '--data-root', root, '--write-config', str(plain)])


@pytest.mark.parametrize('base, path', [
    ('configs/rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py',
     ['roi_head', 'bbox_head', 'loss_cls']),
    ('configs/dense/atss/atss_r18-w32_fpn_rambo_16e_digitsvoc.py',
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
    with pytest.raises(ValueError, match='no RaMBOAPLoss'):
        tool.main([pkl, '--data-root', root, '--write-config',
                   str(tmp_path / 'x.py'), '--base', osp.join(
                       ROOT, 'configs', 'rambo',
                       'faster-rcnn_r50_fpn_rambo-bce_1x_voc0712.py')])
