"""What detection scores mean: precision / recall at a threshold, and
calibration (docs/thresholds.md).

VOC matching (:func:`match_detections`), precision and recall at a threshold,
detection ECE (count-weighted ``|precision - mean score|`` over equal-width
bins), Platt and isotonic calibration (monotone: every ranking and AP kept),
and LaECE_0 (Kuzucu et al., ECCV 2024, "On Calibration of Object Detectors:
Pitfalls, Evaluation and Baselines", arXiv 2405.20459): a score should equal
its box's IoU with the object it found (0 if none), per class, as the official
code (fiveai/detection_calibration) computes it."""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .lrp import box_overlaps, lrp_match

#: Thresholds at which precision and recall are reported: MMDetection's test
#: threshold, its visualiser's default and a strict one.
REPORTED_THRESHOLDS = (0.05, 0.3, 0.5)

__all__ = [
    'REPORTED_THRESHOLDS', 'box_iou', 'paired_images', 'match_detections',
    'precision_recall_at',
    'expected_calibration_error', 'fit_platt', 'apply_platt', 'fit_isotonic',
    'apply_isotonic', 'laece_targets', 'localisation_aware_ece',
    'LAECE_NUM_BINS', 'classes_with_objects', 'laece'
]

#: Bins of LaECE_0 (equal width over [0, 1]), as in Kuzucu et al.
LAECE_NUM_BINS = 25


def box_iou(boxes: np.ndarray, gts: np.ndarray) -> np.ndarray:
    """IoU of (N, 4) boxes with (M, 4) boxes, xyxy in pixels, (N, M).

    Widths are ``x2 - x1`` (MMDetection's convention since 3.0, which
    ``VOCMetric`` also uses with its default ``use_legacy_coordinate``).
    """
    return box_overlaps(boxes, gts)


def paired_images(detections: Sequence[dict], ground_truths: Sequence[dict]):
    """Yields each image's detections and ground truth as arrays.

    Args:
        detections (sequence of dict): Per image ``bboxes`` (N, 4) xyxy,
            ``scores`` (N,), ``labels`` (N,).
        ground_truths (sequence of dict): Per image (same order)
            ``bboxes`` (M, 4), ``labels`` (M,), optionally ``difficult``
            (M,) booleans.

    Yields:
        tuple: ``(boxes (N, 4), scores (N,), labels (N,))`` float64 /
        float64 / int of the detections and ``(boxes (M, 4), labels (M,),
        difficult (M,) bool)`` of the ground truth.
    """
    if len(detections) != len(ground_truths):
        raise ValueError(f'{len(detections)} detection lists for '
                         f'{len(ground_truths)} images')
    for det, gt in zip(detections, ground_truths):
        g_labels = np.asarray(gt['labels']).reshape(-1).astype(int)
        yield ((np.asarray(det['bboxes'], dtype=np.float64).reshape(-1, 4),
                np.asarray(det['scores'], dtype=np.float64).reshape(-1),
                np.asarray(det['labels']).reshape(-1).astype(int)),
               (np.asarray(gt['bboxes'], dtype=np.float64).reshape(-1, 4),
                g_labels,
                np.asarray(gt.get('difficult', np.zeros(len(g_labels))),
                           dtype=bool).reshape(-1)))


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
    all_scores: List[np.ndarray] = []
    all_tp: List[np.ndarray] = []
    num_gt = 0
    for det, gt in paired_images(detections, ground_truths):
        d_boxes, d_scores, d_labels = det
        g_boxes, g_labels, g_diff = gt
        num_gt += int((~g_diff).sum())
        for label in np.unique(d_labels):
            sel = np.flatnonzero(d_labels == label)
            sel = sel[np.argsort(-d_scores[sel], kind='stable')]
            gsel = np.flatnonzero(g_labels == label)
            used = np.zeros(len(gsel), dtype=bool)
            ious = box_iou(d_boxes[sel], g_boxes[gsel])
            for row, index in enumerate(sel):
                best = int(np.argmax(ious[row])) if len(gsel) else None
                tp = False
                if best is not None and ious[row, best] >= iou_thr:
                    if g_diff[gsel[best]]:
                        continue  # neither TP nor FP, as in VOC
                    tp, used[best] = not used[best], True
                all_scores.append(d_scores[index:index + 1])
                all_tp.append(np.full(1, tp))
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
    """Fits ``p' = sigmoid(a * logit(p) + b)`` by maximum likelihood: damped
    Newton from ``a = 1, b = 0`` with a tiny ridge (defined on separable data);
    soft targets (IoUs) fit the expected target.

    Args:
        scores (np.ndarray): (N,) scores in [0, 1].
        is_tp (np.ndarray): (N,) targets: True / False (a D-ECE fit) or values
            in [0, 1] such as :func:`laece_targets`'s (a LaECE fit).
        max_iter (int): Newton steps at most. Defaults to 100.

    Returns:
        tuple: ``(a, b)``; ``a > 0`` unless the scores rank true positives
        below false ones.
    """
    x = _logit(scores)
    y = np.asarray(is_tp, dtype=np.float64)
    if x.size == 0 or y.min() == y.max():
        raise ValueError('fitting a calibration needs both true and false '
                         f'positives, got {int(y.sum())} of {y.size}')
    identity = np.array([1.0, 0.0])
    theta = identity.copy()
    features = np.stack([x, np.ones_like(x)], 1)
    ridge = 1e-6 * x.size

    def objective(t: np.ndarray) -> float:
        z = features @ t
        return float(np.sum(np.logaddexp(0.0, z) - y * z) +
                     0.5 * ridge * np.sum((t - identity)**2))

    value = objective(theta)
    for _ in range(max_iter):
        p = _sigmoid(features @ theta)
        grad = features.T @ (p - y) + ridge * (theta - identity)
        hess = (features * (p * (1 - p))[:, None]).T @ features + \
            ridge * np.eye(2)
        step = np.linalg.solve(hess, grad)
        # damped Newton: halve the step until the objective does not rise
        # (a full step overshoots from the identity on soft IoU targets)
        scale = 1.0
        while scale > 1e-8 and objective(theta - scale * step) > value:
            scale /= 2
        theta = theta - scale * step
        value = objective(theta)
        if np.abs(scale * step).max() < 1e-10:
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


def fit_isotonic(scores: np.ndarray,
                 targets: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Isotonic regression of ``targets`` on ``scores`` (pool adjacent
    violators; equal scores pooled first), as knots ``(x, y)``: ``x``
    increasing, ``y`` non-decreasing in [0, 1], the ends of each constant run;
    :func:`apply_isotonic` interpolates as scikit-learn's
    ``IsotonicRegression(out_of_bounds='clip')``.

    Args:
        scores (np.ndarray): (N,) scores.
        targets (np.ndarray): (N,) targets in [0, 1] (TP flags or IoUs).

    Returns:
        tuple: knots ``x`` (K,) and ``y`` (K,), float64, ``K >= 1``.
    """
    x = np.asarray(scores, dtype=np.float64).reshape(-1)
    t = np.asarray(targets, dtype=np.float64).reshape(-1)
    if x.size == 0 or x.size != t.size:
        raise ValueError('fit_isotonic: scores and targets must be two '
                         f'non-empty arrays of one length, got {x.size} and '
                         f'{t.size}')
    if not (np.isfinite(x).all() and np.isfinite(t).all()):
        raise ValueError('fit_isotonic: scores and targets must be finite')
    ux, inverse = np.unique(x, return_inverse=True)
    weight = np.bincount(inverse).astype(np.float64)
    mean = np.bincount(inverse, weights=t) / weight
    # pool adjacent violators over the unique scores: a stack of blocks
    # (value, weight, first index, last index)
    values: List[float] = []
    weights: List[float] = []
    starts: List[int] = []
    for i in range(ux.size):
        values.append(mean[i])
        weights.append(weight[i])
        starts.append(i)
        while len(values) > 1 and values[-2] > values[-1]:
            w = weights[-2] + weights[-1]
            v = (values[-2] * weights[-2] + values[-1] * weights[-1]) / w
            values[-2:] = [v]
            weights[-2:] = [w]
            starts.pop()
    ends = starts[1:] + [ux.size]
    knots_x: List[float] = []
    knots_y: List[float] = []
    for v, first, stop in zip(values, starts, ends):
        last = stop - 1
        knots_x.append(ux[first])
        knots_y.append(v)
        if last != first:
            knots_x.append(ux[last])
            knots_y.append(v)
    return (np.asarray(knots_x, dtype=np.float64),
            np.clip(np.asarray(knots_y, dtype=np.float64), 0.0, 1.0))


def apply_isotonic(scores: np.ndarray, x: np.ndarray,
                   y: np.ndarray) -> np.ndarray:
    """The isotonic map of :func:`fit_isotonic` at ``scores`` (N,):
    linear between the knots ``(x, y)``, the end values outside."""
    return np.interp(np.asarray(scores, dtype=np.float64), x, y)


def laece_targets(detections: Sequence[dict],
                  ground_truths: Sequence[dict],
                  iou_thr: float = 0.0,
                  ignored_overlap: str = 'iof',
                  max_dets: Optional[int] = 100) -> Tuple[np.ndarray,
                                                           np.ndarray,
                                                           np.ndarray]:
    """Scores, IoU targets and labels of the detections, matched as the
    official LaECE code (fiveai/detection_calibration) matches them.

    Per image and class as :func:`~.lrp.lrp_match`: by descending score each
    detection takes the unmatched box of highest IoU ``>= iou_thr`` (at 0 any
    box of the class, overlapping or not). A hit's target is its IoU, any other
    detection's 0; a miss that overlaps a ``difficult`` / crowd box is left
    out.

    Args:
        detections (sequence of dict): Per image ``bboxes`` (N, 4) xyxy,
            ``scores`` (N,), ``labels`` (N,).
        ground_truths (sequence of dict): Per image (same order) ``bboxes`` (M,
            4), ``labels`` (M,), optionally ``difficult`` (M,) booleans.
        iou_thr (float): ``tau`` of a hit. Defaults to 0 (LaECE_0).
        ignored_overlap (str): ``'iof'`` or ``'iou'``: :func:`~.lrp.lrp_match`.
            Defaults to 'iof'.
        max_dets (int, optional): Detections per image and class that count.
            Defaults to 100.

    Returns:
        tuple: ``scores`` (K,), ``targets`` (K,) in [0, 1] and ``labels`` (K,)
        of the detections that count.
    """
    out_s, out_t, out_l = [], [], []
    for det, gt in paired_images(detections, ground_truths):
        d_boxes, d_scores, d_labels = det
        g_boxes, g_labels, g_diff = gt
        for label in np.unique(d_labels):
            d = d_labels == label
            g = g_labels == label
            kind, ious = lrp_match(d_boxes[d], d_scores[d],
                                   g_boxes[g & ~g_diff], g_boxes[g & g_diff],
                                   iou_thr, 0.0, ignored_overlap, max_dets)
            keep = kind >= 0
            out_s.append(d_scores[d][keep])
            out_t.append(np.where(kind[keep] == 1, ious[keep], 0.0))
            out_l.append(d_labels[d][keep])
    if not out_s:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=int)
    return (np.concatenate(out_s), np.concatenate(out_t),
            np.concatenate(out_l))


def classes_with_objects(ground_truths: Sequence[dict]) -> np.ndarray:
    """The labels of the ground-truth boxes that count (not
    ``difficult``) in ``ground_truths``, sorted, unique."""
    labels = [np.asarray(gt['labels']).reshape(-1)[
        ~np.asarray(gt.get('difficult', np.zeros(len(gt['labels']))),
                    dtype=bool).reshape(-1)] for gt in ground_truths]
    return np.unique(np.concatenate(labels).astype(int)) if labels \
        else np.zeros(0, dtype=int)


def laece(detections: Sequence[dict], ground_truths: Sequence[dict],
          iou_thr: float = 0.0, num_bins: int = LAECE_NUM_BINS) -> float:
    """LaECE of detections as the official code computes it: the targets
    of :func:`laece_targets` at ``iou_thr`` (0: LaECE_0), averaged over
    the classes with ground truth (:func:`localisation_aware_ece`)."""
    scores, targets, labels = laece_targets(detections, ground_truths,
                                            iou_thr)
    return localisation_aware_ece(scores, targets, labels, num_bins,
                                  classes_with_objects(ground_truths))


def localisation_aware_ece(scores: np.ndarray,
                           targets: np.ndarray,
                           labels: np.ndarray,
                           num_bins: int = LAECE_NUM_BINS,
                           classes: Optional[Sequence[int]] = None
                           ) -> float:
    """LaECE: the class mean of a binned calibration error whose target is
    precision times IoU.

    For class ``c``, ``num_bins`` equal-width score bins ``D^c_j`` (the first
    ``[0, 1/J]``, then ``(j/J, (j+1)/J]``) with mean score ``p_j``:

    .. math::

        \\mathrm{LaECE} = \\frac{1}{K} \\sum_c \\sum_j
        \\frac{|D^c_j|}{|D^c|} \\left| p^c_j - \\mathrm{precision}^c_j
        \\cdot \\mathrm{IoU}^c_j \\right|

    ``precision_j * IoU_j`` is the bin's mean :func:`laece_targets` target.
    With ``classes`` (official: :func:`classes_with_objects`) the mean runs
    over those with a detection, a class of error exactly 0 left out as the
    official code does; without, over every class with a detection.

    Args:
        scores (np.ndarray): (N,) scores in [0, 1].
        targets (np.ndarray): (N,) targets in [0, 1].
        labels (np.ndarray): (N,) class of each detection.
        num_bins (int): ``J``. Defaults to 25.
        classes (sequence of int, optional): The classes averaged over.
            Defaults to None (every class with a detection).

    Returns:
        float: LaECE in [0, 1]; NaN without a class to average.
    """
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    targets = np.asarray(targets, dtype=np.float64).reshape(-1)
    labels = np.asarray(labels).reshape(-1)
    if not scores.size == targets.size == labels.size:
        raise ValueError('localisation_aware_ece: scores, targets and labels '
                         f'must have one length, got {scores.size}, '
                         f'{targets.size} and {labels.size}')
    if scores.size == 0:
        return float('nan')
    if ((scores < 0) | (scores > 1)).any():
        raise ValueError('localisation_aware_ece: scores must lie in [0, 1], '
                         f'got range [{scores.min()}, {scores.max()}]')
    # bin j holds (edge_j, edge_j+1], bin 0 also holds 0
    edges = np.linspace(0.0, 1.0, num_bins + 1)
    bins = np.maximum(np.searchsorted(edges, scores, side='left') - 1, 0)
    errors = []
    wanted = np.unique(labels)
    if classes is not None:
        wanted = np.intersect1d(wanted, np.asarray(classes))
    for c in wanted:
        sel = labels == c
        n = sel.sum()
        err = 0.0
        for b in np.unique(bins[sel]):
            in_bin = sel & (bins == b)
            err += in_bin.sum() / n * abs(scores[in_bin].mean() -
                                          targets[in_bin].mean())
        if classes is None or err != 0:
            errors.append(err)
    return float(np.mean(errors)) if errors else float('nan')
