"""What detection scores mean: precision / recall at a threshold, and
calibration.

A rank loss fixes the order of the scores, not their meaning, yet users
deploy with a threshold (MMDetection's visualiser draws boxes above 0.3).
These functions measure, on VOC-style ground truth, what a threshold buys:

* :func:`match_detections`: marks each detection true or false positive
  exactly as VOC AP50 does (per class, by descending score, IoU >= 0.5,
  each ground-truth box used once, detections matched to a ``difficult``
  box neither true nor false);
* :func:`precision_recall_at`: precision and recall of the detections
  scoring at least ``t``;
* :func:`expected_calibration_error`: detection ECE (D-ECE): the
  count-weighted mean, over equal-width score bins, of ``|precision -
  mean score|``;
* :func:`fit_platt` / :func:`apply_platt`: a monotone fix, ``p' =
  sigmoid(a * logit(p) + b)`` fitted on validation detections; it keeps
  every ranking (so AP) and only changes what the numbers mean.
"""
from typing import Dict, List, Sequence, Tuple

import numpy as np

#: Thresholds at which precision and recall are reported: MMDetection's test
#: threshold, its visualiser's default and a strict one.
REPORTED_THRESHOLDS = (0.05, 0.3, 0.5)

__all__ = [
    'REPORTED_THRESHOLDS', 'box_iou', 'match_detections', 'precision_recall_at',
    'expected_calibration_error', 'fit_platt', 'apply_platt'
]


def box_iou(boxes: np.ndarray, gts: np.ndarray) -> np.ndarray:
    """IoU of (N, 4) boxes with (M, 4) boxes, xyxy in pixels, (N, M).

    Widths are ``x2 - x1`` (MMDetection's convention since 3.0, which
    ``VOCMetric`` also uses with its default ``use_legacy_coordinate``).
    """
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    gts = np.asarray(gts, dtype=np.float64).reshape(-1, 4)
    lt = np.maximum(boxes[:, None, :2], gts[None, :, :2])
    rb = np.minimum(boxes[:, None, 2:], gts[None, :, 2:])
    inter = np.clip(rb - lt, 0, None).prod(-1)
    area_b = np.clip(boxes[:, 2:] - boxes[:, :2], 0, None).prod(-1)
    area_g = np.clip(gts[:, 2:] - gts[:, :2], 0, None).prod(-1)
    union = area_b[:, None] + area_g[None] - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)


def match_detections(detections: Sequence[dict],
                     ground_truths: Sequence[dict],
                     iou_thr: float = 0.5) -> Tuple[np.ndarray, np.ndarray,
                                                    int]:
    """VOC matching of the detections of a set of images.

    Args:
        detections (sequence of dict): Per image ``bboxes`` (N, 4),
            ``scores`` (N,) and ``labels`` (N,).
        ground_truths (sequence of dict): Per image (same order)
            ``bboxes`` (M, 4), ``labels`` (M,) and optionally ``difficult``
            (M,) booleans.
        iou_thr (float): IoU needed for a match. Defaults to 0.5.

    Returns:
        tuple: ``scores`` (K,) and ``is_tp`` (K,) bool of the detections
        that count (those matched to a difficult box are dropped), and the
        number of non-difficult ground-truth boxes.
    """
    if len(detections) != len(ground_truths):
        raise ValueError(f'{len(detections)} detection lists for '
                         f'{len(ground_truths)} images')
    all_scores: List[np.ndarray] = []
    all_tp: List[np.ndarray] = []
    num_gt = 0
    for det, gt in zip(detections, ground_truths):
        d_boxes = np.asarray(det['bboxes'], dtype=np.float64).reshape(-1, 4)
        d_scores = np.asarray(det['scores'], dtype=np.float64).reshape(-1)
        d_labels = np.asarray(det['labels']).reshape(-1)
        g_boxes = np.asarray(gt['bboxes'], dtype=np.float64).reshape(-1, 4)
        g_labels = np.asarray(gt['labels']).reshape(-1)
        g_diff = np.asarray(gt.get('difficult', np.zeros(len(g_labels))),
                            dtype=bool).reshape(-1)
        num_gt += int((~g_diff).sum())
        for label in np.unique(d_labels):
            sel = np.flatnonzero(d_labels == label)
            sel = sel[np.argsort(-d_scores[sel], kind='stable')]
            gsel = np.flatnonzero(g_labels == label)
            used = np.zeros(len(gsel), dtype=bool)
            ious = box_iou(d_boxes[sel], g_boxes[gsel])
            for row, index in enumerate(sel):
                if len(gsel):
                    best = int(np.argmax(ious[row]))
                    best_iou = ious[row, best]
                else:
                    best_iou = -1.0
                if best_iou >= iou_thr:
                    if g_diff[gsel[best]]:
                        continue  # neither TP nor FP, as in VOC
                    if not used[best]:
                        used[best] = True
                        all_scores.append(d_scores[index:index + 1])
                        all_tp.append(np.ones(1, dtype=bool))
                        continue
                all_scores.append(d_scores[index:index + 1])
                all_tp.append(np.zeros(1, dtype=bool))
    if not all_scores:
        return np.zeros(0), np.zeros(0, dtype=bool), num_gt
    return np.concatenate(all_scores), np.concatenate(all_tp), num_gt


def precision_recall_at(scores: np.ndarray, is_tp: np.ndarray, num_gt: int,
                        thresholds: Sequence[float]) -> Dict[float, dict]:
    """Precision and recall of the detections scoring at least each ``t``.

    Precision is NaN when no detection reaches ``t`` (reported as such,
    never as 0 or 1); recall is NaN without ground truth.
    """
    scores = np.asarray(scores, dtype=np.float64)
    is_tp = np.asarray(is_tp, dtype=bool)
    out = {}
    for t in thresholds:
        keep = scores >= t
        tp = int(is_tp[keep].sum())
        kept = int(keep.sum())
        out[float(t)] = dict(
            precision=tp / kept if kept else float('nan'),
            recall=tp / num_gt if num_gt else float('nan'),
            detections=kept)
    return out


def expected_calibration_error(scores: np.ndarray,
                               is_tp: np.ndarray,
                               num_bins: int = 10) -> float:
    """Detection ECE over ``num_bins`` equal-width bins of [0, 1].

    ``sum_b (n_b / n) * |precision_b - mean score_b|``; a score of exactly 1
    falls in the last bin. NaN for no detections.
    """
    scores = np.asarray(scores, dtype=np.float64)
    is_tp = np.asarray(is_tp, dtype=np.float64)
    if scores.size == 0:
        return float('nan')
    if ((scores < 0) | (scores > 1)).any():
        raise ValueError('scores must lie in [0, 1] for a calibration error, '
                         f'got range [{scores.min()}, {scores.max()}]')
    bins = np.minimum((scores * num_bins).astype(int), num_bins - 1)
    ece = 0.0
    for b in range(num_bins):
        sel = bins == b
        if sel.any():
            ece += sel.mean() * abs(is_tp[sel].mean() - scores[sel].mean())
    return float(ece)


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-7, 1 - 1e-7)
    return np.log(p) - np.log1p(-p)


def fit_platt(scores: np.ndarray, is_tp: np.ndarray,
              max_iter: int = 100) -> Tuple[float, float]:
    """Fits ``p' = sigmoid(a * logit(p) + b)`` by maximum likelihood.

    Newton's method on the two parameters (the log-likelihood is concave),
    started at the identity ``a = 1, b = 0``; a tiny ridge keeps it defined
    when the detections are separable.

    Returns:
        tuple: ``(a, b)``; ``a > 0`` unless the scores rank true positives
        below false ones.
    """
    x = _logit(scores)
    y = np.asarray(is_tp, dtype=np.float64)
    if x.size == 0 or y.min() == y.max():
        raise ValueError('fitting a calibration needs both true and false '
                         f'positives, got {int(y.sum())} of {y.size}')
    theta = np.array([1.0, 0.0])
    features = np.stack([x, np.ones_like(x)], 1)
    ridge = 1e-6 * x.size
    for _ in range(max_iter):
        p = _sigmoid(features @ theta)
        grad = features.T @ (p - y) + ridge * (theta - np.array([1.0, 0.0]))
        hess = (features * (p * (1 - p))[:, None]).T @ features + \
            ridge * np.eye(2)
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.abs(step).max() < 1e-10:
            break
    return float(theta[0]), float(theta[1])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """The logistic function without overflow (``np.exp`` of a large
    negative logit warned and gave inf on the way to the right 0)."""
    out = np.empty_like(x, dtype=np.float64)
    pos = x >= 0
    out[pos] = 1 / (1 + np.exp(-x[pos]))
    e = np.exp(x[~pos])
    out[~pos] = e / (1 + e)
    return out


def apply_platt(scores: np.ndarray, a: float, b: float) -> np.ndarray:
    """``sigmoid(a * logit(p) + b)``: monotone for ``a > 0``."""
    return _sigmoid(a * _logit(scores) + b)
