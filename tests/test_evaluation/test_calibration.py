"""Threshold and calibration measures of detection scores, checked against
MMDetection's own VOC evaluation, brute force and scikit-learn."""
import warnings

import numpy as np
import pytest

from mmdet_rankloss.evaluation import (apply_platt, box_iou,
                                       expected_calibration_error, fit_platt,
                                       match_detections, precision_recall_at)


def _ap_11(scores, is_tp, num_gt):
    order = np.argsort(-scores, kind='stable')
    tp = np.cumsum(is_tp[order])
    fp = np.cumsum(~is_tp[order])
    recall = tp / max(num_gt, 1)
    precision = tp / np.maximum(tp + fp, 1e-12)
    return np.mean([
        precision[recall >= t].max() if (recall >= t).any() else 0.0
        for t in np.arange(0, 1.1, 0.1)
    ])


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_matching_reproduces_mmdet_voc_ap(seed, random_images):
    from mmdet.evaluation.functional import eval_map
    num_classes = 3
    dets, gts = random_images(seed, num_classes=num_classes)
    det_results = [[
        np.concatenate([d['bboxes'][d['labels'] == c],
                        d['scores'][d['labels'] == c, None]], 1)
        for c in range(num_classes)
    ] for d in dets]
    annotations = [
        dict(bboxes=g['bboxes'][~g['difficult']],
             labels=g['labels'][~g['difficult']],
             bboxes_ignore=g['bboxes'][g['difficult']],
             labels_ignore=g['labels'][g['difficult']]) for g in gts
    ]
    _, per_class = eval_map(det_results, annotations, iou_thr=0.5,
                            eval_mode='11points', nproc=1, logger='silent')
    for c in range(num_classes):
        sub_d = [{k: v[d['labels'] == c] for k, v in d.items()} for d in dets]
        sub_g = [{k: v[g['labels'] == c] for k, v in g.items()} for g in gts]
        scores, is_tp, num_gt = match_detections(sub_d, sub_g)
        assert num_gt == per_class[c]['num_gts']
        if num_gt:
            assert _ap_11(scores, is_tp, num_gt) == pytest.approx(
                per_class[c]['ap'], abs=1e-6)


def test_box_iou_brute_force():
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.uniform(0, 50, (5, 2)), rng.uniform(50, 99,
                                                                (5, 2))], 1)
    b = np.concatenate([rng.uniform(0, 50, (4, 2)), rng.uniform(50, 99,
                                                                (4, 2))], 1)
    ious = box_iou(a, b)
    for i in range(5):
        for j in range(4):
            w = min(a[i, 2], b[j, 2]) - max(a[i, 0], b[j, 0])
            h = min(a[i, 3], b[j, 3]) - max(a[i, 1], b[j, 1])
            inter = max(w, 0) * max(h, 0)
            area = lambda x: (x[2] - x[0]) * (x[3] - x[1])  # noqa: E731
            assert ious[i, j] == pytest.approx(
                inter / (area(a[i]) + area(b[j]) - inter))


def test_precision_recall_and_ece_by_hand():
    scores = np.array([0.9, 0.8, 0.35, 0.32, 0.1])
    is_tp = np.array([True, False, True, True, False])
    out = precision_recall_at(scores, is_tp, num_gt=4,
                              thresholds=(0.3, 0.5, 0.95))
    assert out[0.3] == dict(precision=3 / 4, recall=3 / 4, detections=4)
    assert out[0.5] == dict(precision=1 / 2, recall=1 / 4, detections=2)
    assert np.isnan(out[0.95]['precision']) and out[0.95]['recall'] == 0
    # bins: [0.1] -> 0/1 vs 0.1; [0.32, 0.35] -> 1 vs 0.335;
    # [0.8] -> 0 vs 0.8; [0.9] -> 1 vs 0.9
    expected = (0.1 + 2 * (1 - 0.335) + 0.8 + 0.1) / 5
    assert expected_calibration_error(scores, is_tp) == pytest.approx(expected)
    assert expected_calibration_error(np.array([1.0]), np.array([True])) == 0
    assert np.isnan(expected_calibration_error(np.zeros(0), np.zeros(0)))
    with pytest.raises(ValueError, match='range'):
        expected_calibration_error(np.array([1.5]), np.array([True]))


def test_platt_fit_matches_sklearn_and_keeps_ranking():
    from sklearn.linear_model import LogisticRegression
    rng = np.random.default_rng(0)
    x = rng.normal(0, 2, 4000)
    y = rng.random(4000) < 1 / (1 + np.exp(-(0.5 * x - 1.0)))
    p = 1 / (1 + np.exp(-x))
    a, b = fit_platt(p, y)
    ref = LogisticRegression(C=1e9, max_iter=1000).fit(x[:, None], y)
    assert a == pytest.approx(ref.coef_[0, 0], rel=1e-3)
    assert b == pytest.approx(ref.intercept_[0], abs=1e-3)
    assert a == pytest.approx(0.5, abs=0.1) and b == pytest.approx(-1, abs=.1)
    fixed = apply_platt(p, a, b)
    assert (np.argsort(fixed, kind='stable') ==
            np.argsort(p, kind='stable')).all()
    assert expected_calibration_error(fixed, y) < expected_calibration_error(
        p, y)
    with pytest.raises(ValueError, match='both true and false'):
        fit_platt(p[:10], np.ones(10, bool))


def test_platt_on_separable_scores_is_finite_and_silent():
    """Separable detections drive the fitted slope up until exp overflows:
    the study's runs warned 'overflow encountered in exp' here."""
    from mmdet_rankloss.evaluation.calibration import fit_platt
    scores = np.array([1e-9, 1e-8, 0.3, 0.4, 0.999999, 1.0 - 1e-9])
    is_tp = np.array([0, 0, 0, 1, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        a, b = fit_platt(scores, is_tp)
        out = apply_platt(scores, a, b)
        extreme = apply_platt(scores, 1e4, 0.0)
    assert np.isfinite([a, b]).all() and a > 0
    assert np.isfinite(out).all() and (np.diff(out) >= 0).all()
    assert extreme[0] == 0.0 and extreme[-1] == 1.0
