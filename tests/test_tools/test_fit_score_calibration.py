"""The calibration fit reads tools/test.py's detections and the VOC XML,
and prints the config line that stores the fit."""
import pickle

import numpy as np
import pytest
import torch

from mmdet_rankloss.utils.digits_voc import make_digits_voc


def test_fit_from_detections(tmp_path, capsys, load_tool):
    tool = load_tool('tools/analysis/fit_score_calibration.py')
    root = str(tmp_path / 'VOCdevkit')
    make_digits_voc(root, splits=(('train', 1), ('val', 6), ('test', 1)))
    ids, gts = tool.load_ground_truth(root, 'val')
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
    a, b = tool.main([str(pkl), '--data-root', root])
    out = capsys.readouterr().out
    assert a > 0 and 'loss_cls.calibration="(' in out
    assert 'as trained: D-ECE' in out and 'Platt: D-ECE' in out
    with pytest.raises(SystemExit, match='no detections'):
        tool.main([str(pkl), '--data-root', root, '--split', 'test'])
