"""Optimal LRP in the study records and reports (``test_lrp``): computed
from a run's test detections as ``LRPMetric`` computes it, and reported
beside AP50 where the records have it."""
import math
import os.path as osp
import pickle

import numpy as np
import pytest

from rankloss_lab.study import report as report_mod
from rankloss_lab.study.runs import load_ground_truth, olrp_on_test


def _write_detections(path, ids, gts, root, shift=0.0, extra_fp=False):
    """A ``tools/test.py --out`` file: each ground-truth box (shifted right
    by ``shift`` of its width), scored 0.9, and optionally a false positive
    of score 0.1 per image."""
    items = []
    for img_id, gt in zip(ids, gts):
        boxes = np.asarray(gt['bboxes'], dtype=np.float32).reshape(-1, 4)
        boxes = boxes + np.array([1, 0, 1, 0], np.float32) * shift * (
            boxes[:, 2:3] - boxes[:, 0:1])
        labels = np.asarray(gt['labels'])
        scores = np.full(len(boxes), 0.9, np.float32)
        if extra_fp:
            boxes = np.r_[boxes, [[0, 0, 3, 3]]].astype(np.float32)
            labels = np.r_[labels, 0]
            scores = np.r_[scores, 0.1].astype(np.float32)
        items.append(dict(
            img_path=osp.join(root, 'VOC2007', 'JPEGImages', f'{img_id}.jpg'),
            pred_instances=dict(bboxes=boxes, scores=scores, labels=labels)))
    with open(path, 'wb') as f:
        pickle.dump(items, f)


def test_perfect_detections_have_olrp_zero(digits_root, tmp_path):
    ids, gts = load_ground_truth(digits_root, 'test')
    pkl = str(tmp_path / 'dets.pkl')
    _write_detections(pkl, ids, gts, digits_root, extra_fp=True)
    out = olrp_on_test(digits_root, pkl)
    # the false positives score below every true one: s* drops them
    assert out['oLRP'] == pytest.approx(0.0, abs=1e-9)
    assert out['oLRP_FP'] == pytest.approx(0.0, abs=1e-9)


def test_shifted_boxes_cost_their_localisation_error(digits_root, tmp_path):
    ids, gts = load_ground_truth(digits_root, 'test')
    pkl = str(tmp_path / 'dets.pkl')
    # a box shifted by 1/4 of its width keeps IoU (3/4) / (5/4) = 0.6
    _write_detections(pkl, ids, gts, digits_root, shift=0.25)
    out = olrp_on_test(digits_root, pkl)
    iou = 0.75 / 1.25
    # every class: all TPs, no FP or FN: LRP = (1 - IoU) / (1 - 0.5)
    assert out['oLRP_loc'] == pytest.approx(1 - iou, rel=1e-3)
    assert out['oLRP'] == pytest.approx((1 - iou) / 0.5, rel=1e-3)


def test_the_report_gives_olrp_only_where_runs_recorded_it():
    spec = dict(methods=dict(a=dict(label='A'), b=dict(label='B')))
    chosen = dict(a=0.1, b=0.2)
    per_method = dict(a={1: 0.5, 2: 0.6}, b={1: 0.4})
    results = {('a', 0.1, 1): dict(test_lrp=dict(oLRP=0.7, oLRP_loc=0.2,
                                                 oLRP_FP=0.3, oLRP_FN=0.4)),
               ('a', 0.1, 2): dict(test_lrp=dict(oLRP=0.5, oLRP_loc=0.2,
                                                 oLRP_FP=0.3, oLRP_FN=0.2)),
               ('b', 0.2, 1): {}}
    lines = report_mod._lrp_lines(spec, results, chosen, per_method)
    rows = [line for line in lines if line.startswith('| A')]
    assert rows == ['| A | 2 | 60.0 ± 14.1 | 20.0 ± 0.0 | 30.0 ± 0.0 | '
                    '30.0 ± 14.1 |']
    assert not any(line.startswith('| B') for line in lines)
    assert report_mod._lrp_lines(spec, {k: {} for k in results}, chosen,
                                 per_method) == []
    assert math.isclose(np.std([70, 50], ddof=1), 14.142, rel_tol=1e-4)
