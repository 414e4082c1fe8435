"""Per-class thresholds: LRP at given thresholds by hand, the LRP-optimal
ones equal LRPMetric's and a brute-force search, and the filtering."""
import numpy as np
import pytest

from mmdet_rankloss.evaluation import (class_matches, keep_above,
                                       lrp_at_thresholds,
                                       lrp_optimal_thresholds)


def _one_class():
    """Two objects; a hit of IoU 0.8 at 0.9, a box on nothing at 0.6, a hit
    of IoU 0.6 at 0.4."""
    gt = dict(bboxes=np.array([[0, 0, 10, 10], [20, 0, 30, 10]], float),
              labels=np.array([0, 0]))
    det = dict(bboxes=np.array([[0, 0, 10, 8], [50, 50, 60, 60],
                                [20, 0, 30, 6]], float),
               scores=np.array([0.9, 0.6, 0.4]), labels=np.array([0, 0, 0]))
    return det, gt


def test_lrp_at_thresholds_by_hand():
    det, gt = _one_class()
    matches = class_matches([det], [gt], num_classes=1)
    # at 0.5: 1 TP (1 - 0.8) / 0.5 = 0.4, 1 FP, 1 FN: 2.4 / 3
    at = lrp_at_thresholds(matches, [0.5])
    assert at['LRP'] == pytest.approx(2.4 / 3)
    assert at['LRP_loc'] == pytest.approx(0.2)
    assert at['LRP_FP'] == pytest.approx(0.5)
    assert at['LRP_FN'] == pytest.approx(0.5)
    # at 0.3: 2 TP (0.2 + 0.4) / 0.5 = 1.2, 1 FP, 0 FN: 2.2 / 3
    at = lrp_at_thresholds(matches, [0.3])
    assert at['LRP'] == pytest.approx(2.2 / 3)
    assert (at['LRP_loc'], at['LRP_FP'], at['LRP_FN']) == pytest.approx(
        (0.3, 1 / 3, 0.0))
    # keep nothing: LRP 1, every object missed
    at = lrp_at_thresholds(matches, [np.inf])
    assert at['LRP'] == 1.0 and at['LRP_FN'] == 1.0
    assert np.isnan(at['LRP_loc']) and np.isnan(at['LRP_FP'])
    # at 0.9: 1 TP (0.4), 0 FP, 1 FN: 1.4 / 2 = 0.7, the lowest of the
    # candidates 0.9, 0.6 (2.4 / 3), 0.4 (2.2 / 3) and none (1)
    best = lrp_optimal_thresholds(matches)[0]
    assert best['threshold'] == 0.9
    assert best['oLRP'] == pytest.approx(0.7)
    assert lrp_at_thresholds(matches, [0.9])['LRP'] == pytest.approx(0.7)


def test_a_class_without_ground_truth_gets_no_threshold():
    det, gt = _one_class()
    matches = class_matches([det], [gt], num_classes=2)
    assert matches[1][3] == 0
    assert lrp_optimal_thresholds(matches)[1] is None
    at = lrp_at_thresholds(matches, [0.5, 0.5])
    assert at['classes'][1] is None
    assert at['LRP'] == pytest.approx(2.4 / 3)  # class 0 alone


def _tied(random_images, seed):
    """Random images with scores rounded to one decimal (ties)."""
    dets, gts = random_images(seed)
    return [dict(d, scores=np.round(d['scores'], 1)) for d in dets], gts


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_optimal_thresholds_are_the_brute_force_minimum(seed,
                                                        random_images):
    """With ``ties='together'`` the minimum over the sets a threshold
    keeps (the official split: test_official_lrp.py)."""
    dets, gts = _tied(random_images, seed)
    matches = class_matches(dets, gts, 3)
    optimal = lrp_optimal_thresholds(matches, ties='together')
    for c, (scores, _, _, num_gt) in enumerate(matches):
        if not num_gt:
            continue
        candidates = np.r_[np.unique(scores), np.inf]
        lrps = [lrp_at_thresholds(matches, [t if k == c else np.inf
                                            for k in range(3)])['classes'][c]
                ['LRP'] for t in candidates]
        assert optimal[c]['oLRP'] == pytest.approx(min(lrps))
        at = lrp_at_thresholds(matches, [optimal[c]['threshold']] * 3)
        assert at['classes'][c]['LRP'] == pytest.approx(optimal[c]['oLRP'])


@pytest.mark.parametrize('seed', [0, 1])
def test_thresholds_equal_lrp_metric(seed, random_images):
    """LRPMetric, fed the same images as data samples, chooses the same
    thresholds (difficult boxes as ignored_instances)."""
    import torch

    from mmdet_rankloss.evaluation import LRPMetric
    dets, gts = _tied(random_images, seed)
    metric = LRPMetric()
    metric.dataset_meta = dict(classes=('a', 'b', 'c'))
    samples = []
    for det, gt in zip(dets, gts):
        diff = gt['difficult']
        samples.append(dict(
            pred_instances=dict(bboxes=torch.as_tensor(det['bboxes']),
                                scores=torch.as_tensor(det['scores']),
                                labels=torch.as_tensor(det['labels'])),
            gt_instances=dict(bboxes=torch.as_tensor(gt['bboxes'][~diff]),
                              labels=torch.as_tensor(gt['labels'][~diff])),
            ignored_instances=dict(
                bboxes=torch.as_tensor(gt['bboxes'][diff]),
                labels=torch.as_tensor(gt['labels'][diff]))))
    metric.process({}, samples)
    metric.evaluate(len(samples))
    mine = lrp_optimal_thresholds(class_matches(dets, gts, 3))
    for c, name in enumerate(('a', 'b', 'c')):
        if mine[c] is None:
            assert name not in metric.optimal_thresholds
        else:
            assert metric.optimal_thresholds[name] == mine[c]['threshold']


def test_keep_above():
    det = dict(bboxes=np.arange(12, dtype=float).reshape(3, 4),
               scores=np.array([0.2, 0.5, 0.9]), labels=np.array([0, 1, 1]),
               img_id=7)
    kept, = keep_above([det], [0.1, 0.6])
    assert kept['scores'] == pytest.approx([0.2, 0.9])
    assert list(kept['labels']) == [0, 1] and kept['img_id'] == 7
    assert kept['bboxes'].tolist() == [det['bboxes'][0].tolist(),
                                       det['bboxes'][2].tolist()]
    none, = keep_above([det], [np.inf, np.inf])
    assert none['bboxes'].shape == (0, 4)
