"""LRPMetric: oLRP, its components and the LRP-optimal threshold, against
hand computations, a brute-force search, and MMDetection's evaluator API.

Boxes are axis-aligned with a ground-truth box [0, 0, 10, 10] (area 100), so
[0, 0, 10, h] has IoU h / 10 exactly; tau = 0.5 throughout, so a true
positive of IoU 0.8 adds (1 - 0.8) / (1 - 0.5) = 0.4 to the numerator.
"""
import math

import numpy as np
import pytest
import torch
from mmengine.evaluator import Evaluator
from mmengine.structures import InstanceData

import mmdet_rankloss  # noqa: F401  (registers LRPMetric)
from mmdet.registry import METRICS
from mmdet.structures import DetDataSample
from mmdet_rankloss.evaluation import LRPMetric, lrp_match, optimal_lrp

FAR = [[100 + 20 * i, 100, 110 + 20 * i, 110] for i in range(10)]


def sample(det_boxes=(), det_scores=(), det_labels=(), gt_boxes=(),
           gt_labels=(), ign_boxes=(), ign_labels=()):
    """A DetDataSample as a detector returns it in predict mode."""
    def boxes(b):
        return torch.tensor(np.asarray(b, dtype=np.float32).reshape(-1, 4))

    def labels(x):
        return torch.tensor(np.asarray(x, dtype=np.int64).reshape(-1))

    ds = DetDataSample()
    ds.pred_instances = InstanceData(
        bboxes=boxes(det_boxes),
        scores=torch.tensor(np.asarray(det_scores, np.float32).reshape(-1)),
        labels=labels(det_labels))
    ds.gt_instances = InstanceData(bboxes=boxes(gt_boxes),
                                   labels=labels(gt_labels))
    ds.ignored_instances = InstanceData(bboxes=boxes(ign_boxes),
                                        labels=labels(ign_labels))
    return ds


def run(samples, classes=('a', ), batch=2, **kwargs):
    metric = LRPMetric(**kwargs)
    metric.dataset_meta = dict(classes=classes)
    for i in range(0, len(samples), batch):
        metric.process({}, [s.to_dict() for s in samples[i:i + batch]])
    return metric, metric.evaluate(len(samples))


def test_registered_and_built_from_the_registry():
    metric = METRICS.build(dict(type='LRPMetric', iou_thr=0.6))
    assert isinstance(metric, LRPMetric) and metric.iou_thr == 0.6
    with pytest.raises(ValueError):
        LRPMetric(iou_thr=1.0)


def test_perfect_detection_is_zero():
    gts = [[0, 0, 10, 10], [20, 0, 30, 10]]
    s = sample(gts + [FAR[0]], [0.9, 0.3, 0.1], [0, 0, 0], gts, [0, 0])
    metric, out = run([s])
    assert out['lrp/oLRP'] == 0.0
    assert out['lrp/oLRP_loc'] == 0.0
    assert out['lrp/oLRP_FP'] == 0.0
    assert out['lrp/oLRP_FN'] == 0.0
    # the FP at 0.1 is cut: s* is the lowest score of the true positives
    assert metric.optimal_thresholds == {'a': pytest.approx(0.3)}


def test_all_misses_is_one():
    s = sample(FAR[:3], [0.9, 0.5, 0.2], [0, 0, 0], [[0, 0, 10, 10]], [0])
    metric, out = run([s])
    assert out['lrp/oLRP'] == 1.0
    assert out['lrp/oLRP_FN'] == 1.0
    # no TP and no detection at s* = inf: these components are undefined
    assert math.isnan(out['lrp/oLRP_loc']) and math.isnan(out['lrp/oLRP_FP'])
    assert metric.optimal_thresholds == {'a': math.inf}


def known_case(iou_d3):
    """Three gts; d1 (0.9) TP IoU 0.8, d2 (0.8) FP, d3 (0.7) TP IoU
    ``iou_d3``, d4 (0.6) and d5 (0.5) FPs."""
    gts = [[0, 0, 10, 10], [20, 0, 30, 10], [40, 0, 50, 10]]
    dets = [[0, 0, 10, 8], FAR[0], [20, 0, 30, 10 * iou_d3], FAR[1], FAR[2]]
    return sample(dets, [0.9, 0.8, 0.7, 0.6, 0.5], [0] * 5, gts, [0] * 3)


def test_one_class_by_hand():
    # G = 3; LRP(s) = (sum_TP (1 - IoU) / 0.5 + N_FP + N_FN) / (N_FP + G)
    # s = 0.9: (0.4 + 0 + 2) / (0 + 3) = 0.8
    # s = 0.8: (0.4 + 1 + 2) / (1 + 3) = 0.85
    # s = 0.7: (0.4 + 0.4 + 1 + 1) / (1 + 3) = 0.7   <- minimum
    # s = 0.6: (0.8 + 2 + 1) / (2 + 3) = 0.76
    # s = 0.5: (0.8 + 3 + 1) / (3 + 3) = 0.8
    metric, out = run([known_case(0.8)])
    assert out['lrp/oLRP'] == pytest.approx(0.7)
    assert metric.optimal_thresholds['a'] == pytest.approx(0.7)
    # at s* = 0.7: 2 TP (1 - IoU = 0.2 each), 1 FP, 1 FN
    assert out['lrp/oLRP_loc'] == pytest.approx(0.2)
    assert out['lrp/oLRP_FP'] == pytest.approx(1 / 3)
    assert out['lrp/oLRP_FN'] == pytest.approx(1 / 3)
    r = metric.class_results['a']
    assert (r['num_tp'], r['num_fp'], r['num_gt']) == (2, 1, 3)
    # the components give back LRP: (N_TP loc / (1 - tau) + FP + FN) / Z
    assert (2 * 0.2 / 0.5 + 1 + 1) / 4 == pytest.approx(r['oLRP'])


def test_equal_minima_take_the_highest_threshold():
    # d3 now has IoU 0.6 (adds 0.8):
    # s = 0.9: (0.4 + 0 + 2) / 3 = 0.8;  s = 0.7: (0.4 + 0.8 + 1 + 1) / 4
    # = 0.8 as well; s = 0.8: 0.85, s = 0.6: 0.84, s = 0.5: 5.2 / 6
    metric, out = run([known_case(0.6)])
    assert out['lrp/oLRP'] == pytest.approx(0.8)
    assert metric.optimal_thresholds['a'] == pytest.approx(0.9)
    assert out['lrp/oLRP_loc'] == pytest.approx(0.2)
    assert out['lrp/oLRP_FP'] == 0.0
    assert out['lrp/oLRP_FN'] == pytest.approx(2 / 3)


@pytest.mark.parametrize('fp_first', [False, True])
def test_equal_scores(fp_first):
    # a perfect TP and an FP both at 0.8, one gt. Together: only the set
    # of both exists, LRP = (0 + 1 + 0) / (1 + 1) = 0.5. Split (official):
    # in the given order, the TP alone (0) if it comes first
    dets = [[0, 0, 10, 10], FAR[0]]
    if fp_first:
        dets = dets[::-1]
    s = sample(dets, [0.8, 0.8], [0, 0], [[0, 0, 10, 10]], [0])
    metric, out = run([s], ties='together')
    assert out['lrp/oLRP'] == pytest.approx(0.5)
    assert out['lrp/oLRP_FP'] == pytest.approx(0.5)
    assert metric.optimal_thresholds['a'] == pytest.approx(0.8)
    metric, out = run([s])
    assert out['lrp/oLRP'] == pytest.approx(0.5 if fp_first else 0.0)
    assert metric.optimal_thresholds['a'] == pytest.approx(0.8)


def test_empty_classes():
    # a: perfect (0); b: gt, no detection (1); c: nothing (left out);
    # d: detections but no gt (left out, whatever it detects)
    s = sample([[0, 0, 10, 10], FAR[0]], [0.9, 0.9], [0, 3],
               [[0, 0, 10, 10], [20, 0, 30, 10]], [0, 1])
    metric, out = run([s], classes=('a', 'b', 'c', 'd'), classwise=True)
    assert set(metric.class_results) == {'a', 'b'}
    assert out['lrp/oLRP'] == pytest.approx(0.5)
    assert out['lrp/oLRP_a'] == 0.0 and out['lrp/oLRP_b'] == 1.0
    assert 'lrp/oLRP_c' not in out and 'lrp/oLRP_d' not in out
    assert out['lrp/oLRP_FN'] == pytest.approx(0.5)  # mean of 0 and 1
    # loc and FP are defined for a only
    assert out['lrp/oLRP_loc'] == 0.0 and out['lrp/oLRP_FP'] == 0.0
    assert metric.optimal_thresholds['b'] == math.inf


def test_ignored_ground_truth():
    # a detection on a difficult box (0.95) is neither TP nor FP, and the
    # difficult box is no ground truth: oLRP 0. A second detection on it is
    # also absorbed. A class with only an ignored box is left out.
    s = sample([[200, 0, 210, 10], [200, 0, 210, 9], [0, 0, 10, 10]],
               [0.95, 0.9, 0.5], [0, 0, 0], [[0, 0, 10, 10]], [0],
               ign_boxes=[[200, 0, 210, 10], [0, 50, 10, 60]],
               ign_labels=[0, 1])
    metric, out = run([s], classes=('a', 'b'))
    assert out['lrp/oLRP'] == 0.0
    assert set(metric.class_results) == {'a'}
    assert metric.class_results['a']['num_gt'] == 1
    # a regular gt is preferred to an ignored one it also overlaps
    kind, ious = lrp_match(np.array([[0, 0, 10, 10.]]), np.array([0.5]),
                           np.array([[0, 0, 10, 10.]]),
                           np.array([[0, 0, 10, 10.]]))
    assert kind.tolist() == [1] and ious.tolist() == [1.0]


def test_greedy_matching_takes_the_best_unmatched_gt():
    # gts A = [0,0,10,10], B = [0,2,10,12] (IoU(A, B) = 80 / 120). Two copies
    # of A: the first (0.9) takes A (IoU 1), the second takes B (IoU 2/3).
    # s = 0.9: (0 + 0 + 1) / 2 = 0.5; s = 0.8: (0 + (1/3) / 0.5) / 2 = 1/3
    gts = [[0, 0, 10, 10], [0, 2, 10, 12]]
    s = sample([[0, 0, 10, 10]] * 2, [0.9, 0.8], [0, 0], gts, [0, 0])
    metric, out = run([s])
    assert out['lrp/oLRP'] == pytest.approx(1 / 3)
    assert out['lrp/oLRP_loc'] == pytest.approx(1 / 6)
    assert metric.optimal_thresholds['a'] == pytest.approx(0.8)


def test_legacy_coordinates_change_the_iou():
    # [0,0,9,9] vs [0,0,9,7] is 8 x 10 / 10 x 10 with +1 widths: IoU 0.8;
    # 63 / 81 without
    det, gt = np.array([[0, 0, 9, 7.]]), np.array([[0, 0, 9, 9.]])
    _, legacy = lrp_match(det, np.array([1.]), gt, offset=1.0)
    _, plain = lrp_match(det, np.array([1.]), gt)
    assert legacy[0] == pytest.approx(0.8)
    assert plain[0] == pytest.approx(63 / 81)


def brute_force(images, num_gt, tau=0.5):
    """Re-match and evaluate LRP at every threshold from scratch."""
    def iou(a, b):
        w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
        h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
        inter = w * h
        union = ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) *
                 (b[3] - b[1]) - inter)
        return inter / union

    thresholds = sorted({s for dets, _ in images for _, s in dets})
    best = (1.0, math.inf)
    for t in thresholds:
        loc = n_tp = n_fp = 0
        for dets, gts in images:
            used = [False] * len(gts)
            for box, score in sorted(dets, key=lambda d: -d[1]):
                if score < t:
                    continue
                cands = [(iou(box, g), j) for j, g in enumerate(gts)
                         if not used[j]]
                v, j = max(cands, default=(-1, -1))
                if v >= tau:
                    used[j] = True
                    n_tp += 1
                    loc += (1 - v) / (1 - tau)
                else:
                    n_fp += 1
        lrp = (loc + n_fp + num_gt - n_tp) / (n_fp + num_gt)
        if lrp < best[0] - 1e-12 or (abs(lrp - best[0]) <= 1e-12
                                     and t > best[1]):
            best = (lrp, t)
    return best


@pytest.mark.parametrize('seed', range(4))
def test_matches_a_brute_force_search(seed):
    """``ties='together'``: the minimum over the sets a threshold keeps."""
    rng = np.random.default_rng(seed)
    images, samples, num_gt = [], [], 0
    for _ in range(5):
        g = rng.integers(0, 4)
        gts = rng.uniform(0, 40, (g, 2))
        gts = np.c_[gts, gts + rng.uniform(5, 15, (g, 2))]
        n = rng.integers(0, 8)
        jitter = rng.normal(0, 2, (n, 4))
        src = gts[rng.integers(0, g, n)] if g else rng.uniform(0, 50, (n, 4))
        dets = src + jitter
        dets[:, 2:] = np.maximum(dets[:, 2:], dets[:, :2] + 1)
        scores = rng.integers(1, 6, n) / 5.0  # ties
        images.append(([(list(d), s) for d, s in zip(dets, scores)],
                       [list(x) for x in gts]))
        samples.append(sample(dets, scores, [0] * n, gts, [0] * g))
        num_gt += g
    if num_gt == 0:
        pytest.skip('no ground truth drawn')
    # float32 boxes, as the data samples store them
    images = [([(list(np.float32(b).astype(float)), float(np.float32(s)))
                for b, s in dets], [list(np.float32(g).astype(float))
                                    for g in gts]) for dets, gts in images]
    lrp, t = brute_force(images, num_gt)
    metric, out = run(samples, batch=3, ties='together')
    assert out['lrp/oLRP'] == pytest.approx(lrp, abs=1e-9)
    assert metric.optimal_thresholds['a'] == pytest.approx(t)


def test_optimal_lrp_functional():
    # the known case as arrays: TP IoUs 0.8 at 0.9 and 0.7
    out = optimal_lrp([0.9, 0.8, 0.7, 0.6, 0.5],
                      [True, False, True, False, False],
                      [0.8, 0, 0.8, 0, 0], num_gt=3)
    assert out['oLRP'] == pytest.approx(0.7)
    assert out['threshold'] == pytest.approx(0.7)
    with pytest.raises(ValueError):
        optimal_lrp([], [], [], num_gt=0)


def test_through_an_mmengine_evaluator():
    evaluator = Evaluator(
        [dict(type='LRPMetric', prefix='val_lrp', _scope_='mmdet')])
    evaluator.dataset_meta = dict(classes=('a', 'b'))
    batches = [[known_case(0.8)],
               [sample([[0, 0, 10, 10]], [0.4], [1], [[0, 0, 10, 10]], [1])]]
    for b in batches:
        evaluator.process(b, data_batch={})
    out = evaluator.evaluate(2)
    # a: 0.7 (by hand above), b: 0
    assert out['val_lrp/oLRP'] == pytest.approx(0.35)
    assert set(out) == {'val_lrp/oLRP', 'val_lrp/oLRP_loc', 'val_lrp/oLRP_FP',
                        'val_lrp/oLRP_FN'}
    assert all(isinstance(v, float) for v in out.values())
