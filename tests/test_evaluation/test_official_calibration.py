"""LaECE, the per-class thresholds and calibrations against a port of the
official code of Kuzucu et al. (``_official_calibration.py``,
fiveai/detection_calibration): zero overlaps at IoU threshold 0, crowd
regions, ties, the classes averaged over, thresholds before and after a
calibration per class (or pooled), random images."""
import math

import _official_calibration as official  # tests/test_evaluation on path
import numpy as np
import pytest
from test_official_lrp import random_images, to_coco

from mmdet_rankloss.evaluation import (calibrate_detections, class_matches,
                                       fit_calibrations, keep_above, laece,
                                       lrp_at_thresholds,
                                       lrp_optimal_thresholds, thresholds_of)

C = 3


def split(seed, grid=True):
    """Random images in id order as (detections, ground truths) and as the
    port's lists."""
    ims = sorted(random_images(seed, grid=grid), key=lambda im: im['img_id'])
    dets = [im['det'] for im in ims]
    gts = [dict(bboxes=im['gt']['bboxes'], labels=im['gt']['labels'],
                difficult=im['gt']['crowd']) for im in ims]
    return dets, gts, to_coco(ims)


def same_thresholds(ours, ref):
    """The port's -1 (class skipped) and NaN (no TP) keep everything, as
    ours ``-inf``."""
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        assert a == -np.inf if (math.isnan(b) or b == -1) else a == b


@pytest.mark.parametrize('tau', [0.0, 0.5])
@pytest.mark.parametrize('seed', range(6))
def test_laece_equals_the_official_code(seed, tau):
    dets, gts, (img_ids, o_gts, o_dts) = split(seed, grid=seed % 2 == 0)
    ref = official.laece(img_ids, range(C), o_gts, o_dts, tau)
    assert laece(dets, gts, tau) == pytest.approx(ref, rel=1e-12, abs=1e-12)


def test_zero_overlap_and_crowd_at_0_by_the_official_code():
    """At 0 a box on nothing scored above the hit takes the object (target
    0) and a crowd region anywhere absorbs a box left without one; both
    as the official code."""
    boxes = np.array([[50, 50, 60, 60], [0, 0, 10, 8], [70, 0, 80, 10.]])
    det = dict(bboxes=boxes, scores=np.array([0.9, 0.7, 0.6]),
               labels=np.zeros(3, int))
    gt = dict(bboxes=np.array([[0, 0, 10, 10], [20, 20, 30, 30.]]),
              labels=np.zeros(2, int), difficult=np.array([False, True]))
    ims = [dict(img_id=1, det=det, gt=dict(gt, crowd=gt['difficult']))]
    img_ids, o_gts, o_dts = to_coco(ims)
    ref = official.laece(img_ids, [0], o_gts, o_dts, 0.0)
    # 0.9 claims the object at IoU 0, 0.7 and 0.6 are absorbed by the
    # crowd region: one detection, |0.9 - 0|
    assert ref == pytest.approx(0.9)
    assert laece([det], [gt]) == pytest.approx(ref, rel=1e-12)


def pipeline(val, t_dets, tau, pooled):
    """Ours, as fit_class_thresholds.py runs it: thresholds on val,
    calibrations of the kept boxes, thresholds after them; then the test
    detections ``t_dets``."""
    v_dets, v_gts = val
    pre = thresholds_of(lrp_optimal_thresholds(
        class_matches(v_dets, v_gts, C, tau), tau))
    kept = keep_above(v_dets, pre)
    cals, _ = fit_calibrations(kept, v_gts, C, 'isotonic', tau, pooled)
    post = thresholds_of(lrp_optimal_thresholds(class_matches(
        calibrate_detections(kept, cals), v_gts, C, tau), tau))
    final = keep_above(calibrate_detections(keep_above(t_dets, pre), cals),
                       post)
    return pre, post, final


@pytest.mark.parametrize('pooled', [False, True])
@pytest.mark.parametrize('tau', [0.0, 0.5])
@pytest.mark.parametrize('seed', range(4))
def test_thresholds_and_calibration_equal_the_official_code(seed, tau,
                                                            pooled):
    v_dets, v_gts, (v_ids, v_ogts, v_odts) = split(2 * seed)
    t_dets, t_gts, (t_ids, t_ogts, t_odts) = split(2 * seed + 1)
    if pooled:  # the official pooled fit needs every class on val
        present = {g['category_id'] for g in v_ogts if not g['iscrowd']}
        if present != set(range(C)):
            pytest.skip('a class without objects on val')
    model, (o_pre, o_post) = official.fit(v_ids, range(C), v_ogts, v_odts,
                                          tau, pooled)
    o_final = official.transform(t_odts, model, (o_pre, o_post), range(C),
                                 pooled)
    pre, post, final = pipeline((v_dets, v_gts), t_dets, tau,
                                pooled)
    same_thresholds(pre, o_pre)
    same_thresholds(post, o_post)
    scores = np.concatenate([d['scores'] for d in final])
    np.testing.assert_allclose(scores, [d['score'] for d in o_final],
                               rtol=0, atol=1e-12)
    assert laece(final, t_gts, tau) == pytest.approx(
        official.laece(t_ids, range(C), t_ogts, o_final, tau), rel=1e-12,
        abs=1e-12)
    ours = lrp_at_thresholds(class_matches(final, t_gts, C, tau),
                             [-np.inf] * C, tau)['classes']
    for c, ref in official.lrp(t_ids, range(C), t_ogts, o_final,
                               tau).items():
        if ours[c] is None:
            assert math.isnan(ref['lrp'])
            continue
        assert ours[c]['LRP'] == pytest.approx(ref['lrp'], rel=1e-12)
        assert ours[c]['LRP_FN'] == pytest.approx(ref['lrp_fn'], rel=1e-12)
        if ours[c]['num_tp']:  # without a TP the official FP part is NaN
            assert ours[c]['LRP_FP'] == pytest.approx(ref['lrp_fp'],
                                                      rel=1e-12)
