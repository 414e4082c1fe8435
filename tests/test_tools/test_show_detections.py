"""The detection picture draws truth and each run's detections from the
files a study wrote (no model is run)."""
import json
import os
import os.path as osp
import pickle

import numpy as np
import pytest
import torch
from PIL import Image

from mmdet_rankloss.evaluation import load_voc_ground_truth
from rankloss_lab.datasets.digits_voc import DIGIT_CLASSES, make_digits_voc


@pytest.fixture
def tool(load_tool):
    return load_tool('tools/analysis_tools/show_detections.py')


def fake_run(run_dir, root, ids, gts, score):
    """A study run directory whose detections are the truth at ``score``."""
    os.makedirs(osp.join(run_dir, 'eval_test'))
    results = [
        dict(img_path=osp.join(root, 'VOC2007', 'JPEGImages', f'{i}.jpg'),
             pred_instances=dict(
                 bboxes=torch.tensor(gt['bboxes'], dtype=torch.float32),
                 labels=torch.tensor(gt['labels']),
                 scores=torch.full((len(gt['labels']), ), score)))
        for i, gt in zip(ids, gts)
    ]
    with open(osp.join(run_dir, 'eval_test', 'detections.pkl'), 'wb') as f:
        pickle.dump(results, f)
    with open(osp.join(run_dir, 'result.json'), 'w') as f:
        json.dump(dict(calibration=dict(platt=[1.0, 3.0])), f)


def test_picture_has_a_panel_per_run_and_platt_column(tmp_path, tool):
    root = str(tmp_path / 'VOCdevkit')
    make_digits_voc(root, splits=(('train', 1), ('val', 1), ('test', 3)))
    ids, gts = load_voc_ground_truth(root, 'test', DIGIT_CLASSES)
    fake_run(str(tmp_path / 'a'), root, ids, gts, 0.9)
    fake_run(str(tmp_path / 'b'), root, ids, gts, 0.1)
    out = str(tmp_path / 'det.png')
    tool.main([
        out, '--data-root', root, '--run', f'A={tmp_path / "a"}', '--run',
        f'B={tmp_path / "b"}', '--platt', '--num-images', '2', '--scale', '2'
    ])
    image = np.asarray(Image.open(out))
    # 2 rows of (truth, A, A Platt, B, B Platt) panels of 256 px + title
    assert image.shape[:2] == (2 * (256 + 18), 5 * 256)
    panels = image[18:256 + 18].reshape(256, 5, 256, -1)
    # B's boxes at 0.1 are hidden at the 0.3 threshold until Platt lifts
    # them (sigmoid(logit(0.1) + 3) = 0.69): its raw panel is box-free.
    b_raw, b_platt = panels[:, 3], panels[:, 4]
    a_raw = panels[:, 1]
    assert not np.array_equal(a_raw, b_raw)
    assert not np.array_equal(b_raw, b_platt)


def test_bad_run_argument_names_the_problem(tmp_path, tool):
    with pytest.raises(SystemExit, match='LABEL=PATH'):
        tool.parse_run('no-label', 'test')
    with pytest.raises(SystemExit, match='no detections file'):
        tool.parse_run(f'A={tmp_path}', 'test')
