"""Detections and ground truth of random images, shared by the detection
measures' tests."""
import numpy as np
import pytest


def make_random_images(seed, num_images=12, num_classes=3):
    """``(detections, ground truths)`` of ``num_images`` images: jittered
    copies of the ground truth (some twice, some relabelled), random boxes,
    a fifth of the objects ``difficult``."""
    rng = np.random.default_rng(seed)
    dets, gts = [], []
    for _ in range(num_images):
        m = int(rng.integers(0, 5))
        xy = rng.uniform(0, 80, (m, 2))
        wh = rng.uniform(8, 40, (m, 2))
        g_boxes = np.concatenate([xy, xy + wh], 1)
        g_labels = rng.integers(0, num_classes, m)
        g_diff = rng.random(m) < 0.2
        # detections: jittered copies of the ground truth (some twice) and
        # random boxes
        k = int(rng.integers(0, 8))
        pick = rng.integers(0, max(m, 1), k) if m else np.zeros(0, int)
        jitter = rng.normal(0, 4, (len(pick), 4))
        d_boxes = g_boxes[pick] + jitter if m else np.zeros((0, 4))
        d_labels = g_labels[pick] if m else np.zeros(0, int)
        d_labels = np.where(rng.random(len(d_labels)) < 0.2,
                            rng.integers(0, num_classes, len(d_labels)),
                            d_labels)
        r = int(rng.integers(0, 4))
        rxy = rng.uniform(0, 80, (r, 2))
        d_boxes = np.concatenate(
            [d_boxes, np.concatenate([rxy, rxy + 20], 1)])
        d_labels = np.concatenate(
            [d_labels, rng.integers(0, num_classes, r)]).astype(int)
        dets.append(dict(bboxes=d_boxes, labels=d_labels,
                         scores=rng.random(len(d_labels))))
        gts.append(dict(bboxes=g_boxes, labels=g_labels, difficult=g_diff))
    return dets, gts


@pytest.fixture(name='random_images')
def random_images_fixture():
    """:func:`make_random_images`."""
    return make_random_images
