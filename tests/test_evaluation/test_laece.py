"""LaECE_0 and isotonic calibration: hand computations, scikit-learn's
isotonic regression, the bin edges of the definition."""
import numpy as np
import pytest

from mmdet_rankloss.evaluation import (apply_isotonic, apply_platt,
                                       fit_isotonic, fit_platt, laece,
                                       laece_targets, localisation_aware_ece)


def _two_classes():
    """Class 0: one object, a half-overlapping hit at 0.9 and an exact
    duplicate at 0.5 (the object is taken: target 0). Class 1: one object,
    a hit of IoU 1/3 at 0.3 and a box far away at 0.29."""
    det = dict(bboxes=np.array([[0, 0, 10, 5], [0, 0, 10, 10],
                                [25, 20, 35, 30], [50, 50, 60, 60]], float),
               scores=np.array([0.9, 0.5, 0.3, 0.29]),
               labels=np.array([0, 0, 1, 1]))
    gt = dict(bboxes=np.array([[0, 0, 10, 10], [20, 20, 30, 30]], float),
              labels=np.array([0, 1]))
    return det, gt


def test_targets_are_the_iou_of_hits_at_any_overlap():
    det, gt = _two_classes()
    scores, targets, labels = laece_targets([det], [gt])
    order = np.argsort(-scores)
    assert scores[order] == pytest.approx([0.9, 0.5, 0.3, 0.29])
    assert targets[order] == pytest.approx([0.5, 0.0, 1 / 3, 0.0])
    assert list(labels[order]) == [0, 0, 1, 1]
    # IoU 0.1: below VOC's 0.5, still a hit of LaECE_0 with target 0.1
    loose = dict(bboxes=np.array([[0, 0, 10, 1]], float),
                 scores=np.array([0.7]), labels=np.array([0]))
    _, targets, _ = laece_targets([loose], [gt])
    assert targets == pytest.approx([0.1])


def test_at_0_a_box_on_nothing_claims_an_object():
    """Official LaECE_0: a box that touches no object, scored above the
    hit, takes the object (target 0) and leaves the hit a miss (target
    0); ``iou_thr`` just above 0 asks for an overlap."""
    gt = dict(bboxes=np.array([[20, 20, 30, 30]], float),
              labels=np.array([1]))
    det = dict(bboxes=np.array([[25, 20, 35, 30], [50, 50, 60, 60]], float),
               scores=np.array([0.3, 0.31]), labels=np.array([1, 1]))
    _, targets, _ = laece_targets([det], [gt])
    assert targets == pytest.approx([0.0, 0.0])
    _, targets, _ = laece_targets([det], [gt], np.nextafter(0.0, 1.0))
    assert targets == pytest.approx([1 / 3, 0.0])


def test_classes_without_objects_are_left_out():
    """Officially the mean runs over the classes with ground truth: class
    1's box on nothing (an error of 0.9) does not count."""
    gt = dict(bboxes=np.array([[0, 0, 10, 10]], float), labels=np.array([0]))
    det = dict(bboxes=np.array([[0, 0, 10, 5], [50, 50, 60, 60]], float),
               scores=np.array([0.6, 0.9]), labels=np.array([0, 1]))
    assert laece([det], [gt]) == pytest.approx(0.1)
    scores, targets, labels = laece_targets([det], [gt])
    assert localisation_aware_ece(scores, targets, labels) == \
        pytest.approx((0.1 + 0.9) / 2)


def test_a_box_on_a_difficult_object_is_left_out():
    gt = dict(bboxes=np.array([[0, 0, 10, 10], [40, 40, 50, 50]], float),
              labels=np.array([0, 0]), difficult=np.array([False, True]))
    det = dict(bboxes=np.array([[0, 0, 10, 10], [40, 40, 50, 50],
                                [41, 41, 50, 50]], float),
               scores=np.array([0.9, 0.8, 0.7]), labels=np.array([0, 0, 0]))
    scores, targets, _ = laece_targets([det], [gt])
    # the first hits the object; the others touch only the difficult box
    assert scores == pytest.approx([0.9]) and targets == pytest.approx([1.0])


def test_laece_by_hand():
    det, gt = _two_classes()
    scores, targets, labels = laece_targets([det], [gt])
    # class 0: 0.9 and 0.5 in bins of their own:
    #   1/2 |0.9 - 0.5| + 1/2 |0.5 - 0| = 0.45
    # class 1: 0.3 and 0.29 share (0.28, 0.32]:
    #   |0.295 - (1/3 + 0) / 2| = 0.128333...
    expected = (0.45 + abs(0.295 - 1 / 6)) / 2
    assert localisation_aware_ece(scores, targets, labels) == \
        pytest.approx(expected)
    # one bin for everything: |mean score - mean target| per class
    assert localisation_aware_ece(scores, targets, labels, num_bins=1) == \
        pytest.approx((abs(0.7 - 0.25) + abs(0.295 - 1 / 6)) / 2)


def test_bin_edges_are_closed_on_the_right():
    # 0.04 is the first edge of 25 bins: it shares bin 0 with 0.0 and 0.02,
    # not bin 1 with 0.05
    scores = np.array([0.0, 0.04, 0.05])
    targets = np.array([0.0, 0.0, 0.05])
    labels = np.zeros(3, int)
    assert localisation_aware_ece(scores, targets, labels) == \
        pytest.approx(2 / 3 * 0.02)
    assert localisation_aware_ece(np.array([1.0]), np.array([0.0]),
                                  np.zeros(1, int)) == pytest.approx(1.0)


def test_laece_is_a_class_mean_not_a_detection_mean():
    # class 0 has 9 perfect detections, class 1 one off by 0.5
    scores = np.r_[np.full(9, 0.8), 0.5]
    targets = np.r_[np.full(9, 0.8), 0.0]
    labels = np.r_[np.zeros(9, int), 1]
    assert localisation_aware_ece(scores, targets, labels) == \
        pytest.approx(0.25)


def test_laece_refuses_scores_outside_0_1():
    with pytest.raises(ValueError, match='scores must lie in'):
        localisation_aware_ece(np.array([1.5]), np.array([1.0]),
                               np.zeros(1, int))
    assert np.isnan(localisation_aware_ece(np.zeros(0), np.zeros(0),
                                           np.zeros(0, int)))


def test_isotonic_by_hand():
    x, y = fit_isotonic([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1])
    assert x == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert y == pytest.approx([0, 0.5, 0.5, 1])
    # equal scores pooled first, then nothing to fix
    x, y = fit_isotonic([0.5, 0.5, 0.9], [0, 1, 1])
    assert x == pytest.approx([0.5, 0.9]) and y == pytest.approx([0.5, 1])
    # outside the knots: the end values; between: linear
    assert apply_isotonic([0.0, 0.7, 1.0], x, y) == \
        pytest.approx([0.5, 0.75, 1.0])
    with pytest.raises(ValueError, match='non-empty'):
        fit_isotonic([], [])


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_isotonic_matches_scikit_learn(seed):
    from sklearn.isotonic import IsotonicRegression
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random(300), 2)  # with ties
    targets = np.clip(scores ** 2 + rng.normal(0, 0.2, 300), 0, 1) * \
        (rng.random(300) < 0.7)
    x, y = fit_isotonic(scores, targets)
    assert (np.diff(x) > 0).all() and (np.diff(y) >= -1e-12).all()
    ref = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds='clip')
    ref.fit(scores, targets)
    grid = np.r_[np.linspace(-0.1, 1.1, 121), scores]
    np.testing.assert_allclose(apply_isotonic(grid, x, y),
                               ref.predict(grid), atol=1e-10)


def test_isotonic_and_platt_on_iou_targets_lower_laece():
    """Fitted on IoU targets (a LaECE fit), both maps bring an
    overconfident detector's LaECE_0 down on the data they fit."""
    rng = np.random.default_rng(0)
    scores = rng.uniform(0.5, 1.0, 400)
    targets = np.where(rng.random(400) < scores - 0.3,
                       rng.uniform(0.5, 0.9, 400), 0.0)
    labels = rng.integers(0, 3, 400)
    before = localisation_aware_ece(scores, targets, labels)
    a, b = fit_platt(scores, targets)
    x, y = fit_isotonic(scores, targets)
    assert localisation_aware_ece(apply_platt(scores, a, b), targets,
                                  labels) < before / 2
    assert localisation_aware_ece(apply_isotonic(scores, x, y), targets,
                                  labels) < before / 2
