"""LRPMetric and the threshold functions against a port of the official LRP
code (``_official_lrp.py``, kemaloksuz/LRP-Error's COCO evaluator): crowd
regions, tied scores, equal IoUs, IoU threshold 0, random images; and the
variants named as options."""
import math

import numpy as np
import pytest
import torch
from _official_lrp import OfficialEval  # tests/test_evaluation on sys.path

from mmdet_rankloss.evaluation import (LRPMetric, class_matches,
                                       lrp_optimal_thresholds)

KEYS = (('oLRP', 'olrp'), ('oLRP_loc', 'olrp_loc'), ('oLRP_FP', 'olrp_fp'),
        ('oLRP_FN', 'olrp_fn'))


def to_coco(images):
    """``(img_ids, gts, dts)`` for the port from ``images``: per image
    ``img_id``, ``det`` (``bboxes`` xyxy, ``scores``, ``labels``) and
    ``gt`` (``bboxes``, ``labels``, ``crowd``)."""
    def xywh(box):
        x1, y1, x2, y2 = (float(v) for v in box)
        return [x1, y1, x2 - x1, y2 - y1]

    gts = [dict(image_id=im['img_id'], category_id=int(label),
                bbox=xywh(box), iscrowd=int(crowd))
           for im in images for box, label, crowd in zip(
               im['gt']['bboxes'], im['gt']['labels'], im['gt']['crowd'])]
    dts = [dict(image_id=im['img_id'], category_id=int(label),
                bbox=xywh(box), score=float(score))
           for im in images for box, score, label in zip(
               im['det']['bboxes'], im['det']['scores'],
               im['det']['labels'])]
    return [im['img_id'] for im in images], gts, dts


def metric_results(images, num_classes, **kwargs):
    """LRPMetric's ``class_results``, the images processed in the given
    order (the metric orders them by id), crowd boxes as
    ``ignored_instances``."""
    metric = LRPMetric(**kwargs)
    metric.dataset_meta = dict(classes=[str(c) for c in range(num_classes)])
    samples = []
    for im in images:
        crowd = np.asarray(im['gt']['crowd'], bool)
        gb = torch.as_tensor(np.asarray(im['gt']['bboxes'],
                                        np.float64).reshape(-1, 4))
        gl = torch.as_tensor(np.asarray(im['gt']['labels'], np.int64))
        samples.append(dict(
            img_id=im['img_id'],
            pred_instances={k: torch.as_tensor(np.asarray(v))
                            for k, v in im['det'].items()},
            gt_instances=dict(bboxes=gb[~crowd], labels=gl[~crowd]),
            ignored_instances=dict(bboxes=gb[crowd], labels=gl[crowd])))
    metric.process({}, samples)
    metric.evaluate(len(samples))
    return {int(k): v for k, v in metric.class_results.items()}


def assert_official(ours, official, rel=1e-12):
    """Each class of the port, to 1e-12; the port's NaN threshold (no
    true positive) is ours ``inf``."""
    assert set(ours) == set(official)
    for c, ref in official.items():
        for key, ref_key in KEYS:
            a, b = ours[c][key], ref[ref_key]
            assert (math.isnan(a) and math.isnan(b)) or \
                a == pytest.approx(b, rel=rel, abs=rel), (c, key)
        if math.isnan(ref['lrp_opt_thr']):
            assert ours[c]['threshold'] == math.inf
        else:
            assert ours[c]['threshold'] == ref['lrp_opt_thr']


def official(images, num_classes, tau):
    img_ids, gts, dts = to_coco(images)
    return OfficialEval(img_ids, range(num_classes), gts, dts, tau).olrp()


def image(img_id, dets, scores, gts, crowd=(), det_labels=None,
          gt_labels=None):
    dets = np.asarray(dets, np.float64).reshape(-1, 4)
    gts = np.asarray(gts, np.float64).reshape(-1, 4)
    return dict(
        img_id=img_id,
        det=dict(bboxes=dets, scores=np.asarray(scores, np.float64),
                 labels=np.zeros(len(dets), int) if det_labels is None
                 else np.asarray(det_labels)),
        gt=dict(bboxes=gts, labels=np.zeros(len(gts), int)
                if gt_labels is None else np.asarray(gt_labels),
                crowd=np.r_[np.zeros(len(gts) - len(crowd), bool),
                            np.asarray(crowd, bool)]))


def test_a_box_in_a_crowd_region_is_ignored():
    # object [0,0,10,10] found at IoU 0.8 (0.9); a box inside a crowd
    # region [20,0,60,40] (0.95): intersection / its own area = 1, IoU
    # with the region 1/16. Officially ignored: oLRP (0.2 / 0.5) / 1 =
    # 0.4; with ignored_overlap='iou' a FP: 0.95 alone 1, both
    # (0.4 + 1) / 2 = 0.7
    ims = [image(1, [[0, 0, 10, 8], [25, 5, 35, 15]], [0.9, 0.95],
                 [[0, 0, 10, 10], [20, 0, 60, 40]], crowd=[True])]
    ours = metric_results(ims, 1)
    assert ours[0]['oLRP'] == pytest.approx(0.4)
    assert_official(ours, official(ims, 1, 0.5))
    assert metric_results(ims, 1, ignored_overlap='iou')[0]['oLRP'] == \
        pytest.approx(0.7)


def test_equal_scores_are_split_in_image_order():
    # a perfect TP in image 2 and a FP in image 1, both 0.8, processed
    # image 2 first: officially image 1 comes first (FP, then TP: 0.5);
    # the TP first would give 0
    ims = [image(2, [[0, 0, 10, 10]], [0.8], [[0, 0, 10, 10]]),
           image(1, [[50, 50, 60, 60]], [0.8], np.zeros((0, 4)))]
    ours = metric_results(ims, 1)
    assert ours[0]['oLRP'] == pytest.approx(0.5)
    assert_official(ours, official(ims, 1, 0.5))
    # within one image: the TP given first is kept alone (0); together,
    # only the pair exists (0.5)
    ims = [image(1, [[0, 0, 10, 10], [50, 50, 60, 60]], [0.8, 0.8],
                 [[0, 0, 10, 10]])]
    ours = metric_results(ims, 1)
    assert ours[0]['oLRP'] == 0.0 and ours[0]['threshold'] == 0.8
    assert_official(ours, official(ims, 1, 0.5))
    assert metric_results(ims, 1, ties='together')[0]['oLRP'] == \
        pytest.approx(0.5)


def test_equal_iou_takes_the_last_ground_truth():
    # [0,0,10,10] overlaps G1 = [0,-5,10,5] and G2 = [0,5,10,15] by 1/3
    # each and takes G2 (the last); the exact copy of G1 (0.8) then finds
    # G1: two TPs. Taking G1 first would leave the copy a FP.
    ims = [image(1, [[0, 0, 10, 10], [0, -5, 10, 5]], [0.9, 0.8],
                 [[0, -5, 10, 5], [0, 5, 10, 15]])]
    ours = metric_results(ims, 1, iou_thr=0.3)
    assert (ours[0]['num_tp'], ours[0]['num_fp']) == (2, 0)
    assert_official(ours, official(ims, 1, 0.3))


def test_at_iou_threshold_0_a_box_on_nothing_claims_an_object():
    # a box far from the one object (0.9) claims it at IoU 0 (loc error
    # 1); the good box (IoU 0.8, 0.7) is then a FP: oLRP 1 at 0.9
    ims = [image(1, [[50, 50, 60, 60], [0, 0, 10, 8]], [0.9, 0.7],
                 [[0, 0, 10, 10]])]
    ours = metric_results(ims, 1, iou_thr=0.0)
    assert ours[0]['oLRP'] == 1.0 and ours[0]['threshold'] == 0.9
    assert (ours[0]['num_tp'], ours[0]['num_fp']) == (1, 0)
    assert_official(ours, official(ims, 1, 0.0))
    # and with a crowd region anywhere in the image, a box left without an
    # object is ignored (its overlap 0 >= 0)
    ims = [image(1, [[0, 0, 10, 8], [50, 50, 60, 60]], [0.9, 0.7],
                 [[0, 0, 10, 10], [80, 80, 90, 90]], crowd=[True])]
    ours = metric_results(ims, 1, iou_thr=0.0)
    assert ours[0]['num_fp'] == 0
    assert_official(ours, official(ims, 1, 0.0))


def random_images(seed, num_images=10, num_classes=3, grid=True):
    """Objects, crowd regions (a sixth), copies of the objects with
    jitter, boxes on nothing; coordinates on a grid of 1 (equal IoUs
    happen) or float32; scores in tenths (ties); ids shuffled."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(num_images) + 1
    out = []
    for img_id in ids:
        m = int(rng.integers(0, 6))
        xy = rng.uniform(0, 60, (m, 2))
        g = np.c_[xy, xy + rng.uniform(6, 30, (m, 2))]
        g_labels = rng.integers(0, num_classes, m)
        crowd = rng.random(m) < 1 / 6
        k = int(rng.integers(0, 9))
        src = g[rng.integers(0, m, k)] if m else rng.uniform(0, 60, (k, 4))
        d = src + rng.normal(0, 3, (k, 4))
        d_labels = g_labels[rng.integers(0, m, k)] if m else \
            rng.integers(0, num_classes, k)
        r = int(rng.integers(0, 4))
        rxy = rng.uniform(0, 80, (r, 2))
        d = np.r_[d, np.c_[rxy, rxy + 15]]
        d[:, 2:] = np.maximum(d[:, 2:], d[:, :2] + 1)
        d_labels = np.r_[d_labels, rng.integers(0, num_classes, r)]
        if grid:
            g, d = np.round(g), np.round(d)
        else:
            g, d = g.astype(np.float32), d.astype(np.float32)
        d[:, 2:] = np.maximum(d[:, 2:], d[:, :2] + 1)
        out.append(dict(
            img_id=int(img_id),
            det=dict(bboxes=d.astype(np.float64),
                     scores=rng.integers(1, 10, len(d)) / 10,
                     labels=d_labels.astype(int)),
            gt=dict(bboxes=g.astype(np.float64), labels=g_labels,
                    crowd=crowd)))
    return out


@pytest.mark.parametrize('tau', [0.5, 0.0, 0.75])
@pytest.mark.parametrize('seed', range(6))
def test_random_images_equal_the_official_code(seed, tau):
    ims = random_images(seed, grid=seed % 2 == 0)
    ref = official(ims, 3, tau)
    assert_official(metric_results(ims, 3, iou_thr=tau), ref)
    # the threshold functions (the tool's), the images in id order
    ordered = sorted(ims, key=lambda im: im['img_id'])
    dets = [im['det'] for im in ordered]
    gts = [dict(bboxes=im['gt']['bboxes'], labels=im['gt']['labels'],
                difficult=im['gt']['crowd']) for im in ordered]
    mine = lrp_optimal_thresholds(class_matches(dets, gts, 3, tau), tau)
    assert_official({c: r for c, r in enumerate(mine) if r is not None},
                    ref)


def test_max_dets_keeps_the_highest_scores_per_image_and_class():
    # 4 copies of the object, the best scored lowest; with max_dets=3
    # it does not count: the three loose ones (IoU 0.6) remain
    ims = [image(1, [[0, 0, 10, 6]] * 3 + [[0, 0, 10, 10]],
                 [0.9, 0.8, 0.7, 0.6], [[0, 0, 10, 10]])]
    ours = metric_results(ims, 1, max_dets=3)
    ref = OfficialEval(*to_coco(ims)[:1], [0], *to_coco(ims)[1:], 0.5,
                       max_det=3).olrp()
    assert ours[0]['oLRP_loc'] == pytest.approx(0.4)
    assert_official(ours, ref)
