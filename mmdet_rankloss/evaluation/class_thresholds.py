"""Per-class score thresholds: the LRP-optimal ones, chosen on one split, and
the LRP they reach on another (docs/thresholds.md).

A class's LRP-optimal threshold (Oksuz et al., ECCV 2018; applied before and
after calibration by Kuzucu et al., ECCV 2024) is the score at which its LRP
(false positives, misses and loose boxes) is lowest
(:func:`~.lrp.optimal_lrp`). Chosen on val and kept with the model
(:class:`~mmdet_rankloss.engine.ClassScoreThresholdHook`), they are judged on
another split by :func:`lrp_at_thresholds`; :func:`fit_calibrations` fits a
calibration per class (or pooled)."""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .calibration import (apply_isotonic, apply_platt, classes_with_objects,
                          fit_isotonic, fit_platt, laece_targets,
                          paired_images)
from .lrp import lrp_match, optimal_lrp

__all__ = [
    'ClassMatches', 'class_matches', 'lrp_optimal_thresholds',
    'lrp_at_thresholds', 'keep_above', 'thresholds_of',
    'calibrate_detections', 'fit_calibrations'
]

#: One class over a set of images: ``scores`` (N,), ``is_tp`` (N,) bool,
#: ``ious`` (N,) (the IoU of each true positive) of the detections that count
#: (those on ignored boxes left out), and the number of ground-truth boxes.
ClassMatches = Tuple[np.ndarray, np.ndarray, np.ndarray, int]


def class_matches(detections: Sequence[dict],
                  ground_truths: Sequence[dict],
                  num_classes: int,
                  iou_thr: float = 0.5,
                  ignored_overlap: str = 'iof',
                  max_dets: Optional[int] = 100) -> List[ClassMatches]:
    """Each class's detections matched to the ground truth, per image, as
    ``LRPMetric`` matches them.

    Args:
        detections (sequence of dict): Per image ``bboxes`` (N, 4) xyxy,
            ``scores`` (N,), ``labels`` (N,).
        ground_truths (sequence of dict): Per image (same order)
            ``bboxes`` (M, 4), ``labels`` (M,), optionally ``difficult``
            (M,) booleans (VOC difficult / COCO crowd: ignored).
        num_classes (int): Classes ``0 .. num_classes - 1``.
        iou_thr (float): IoU ``tau`` of a true positive. Defaults to 0.5.
        ignored_overlap (str): ``'iof'`` (official) or ``'iou'``:
            :func:`~.lrp.lrp_match`. Defaults to 'iof'.
        max_dets (int, optional): Detections per image and class that
            count (None: all). Defaults to 100.

    Returns:
        list: ``num_classes`` :data:`ClassMatches`, the detections in the
        order of the images (that of equal scores in the official code).
    """
    parts: List[List[tuple]] = [[] for _ in range(num_classes)]
    num_gt = np.zeros(num_classes, dtype=int)
    for det, gt in paired_images(detections, ground_truths):
        d_boxes, d_scores, d_labels = det
        g_boxes, g_labels, g_diff = gt
        for label in np.unique(np.r_[d_labels, g_labels]):
            if not 0 <= label < num_classes:
                raise ValueError(f'label {label} outside the '
                                 f'{num_classes} classes')
            d = d_labels == label
            g = g_labels == label
            num_gt[label] += int((g & ~g_diff).sum())
            kind, ious = lrp_match(d_boxes[d], d_scores[d],
                                   g_boxes[g & ~g_diff],
                                   g_boxes[g & g_diff], iou_thr,
                                   ignored_overlap=ignored_overlap,
                                   max_dets=max_dets)
            keep = kind >= 0
            parts[label].append((d_scores[d][keep], kind[keep] == 1,
                                 ious[keep]))
    out = []
    for c in range(num_classes):
        if parts[c]:
            scores, is_tp, ious = (np.concatenate(x) for x in zip(*parts[c]))
        else:
            scores, is_tp, ious = np.zeros(0), np.zeros(0, bool), np.zeros(0)
        out.append((scores, is_tp, ious, int(num_gt[c])))
    return out


def lrp_optimal_thresholds(matches: Sequence[ClassMatches],
                           iou_thr: float = 0.5,
                           ties: str = 'split') -> List[Optional[dict]]:
    """Each class's LRP-optimal threshold and oLRP.

    Args:
        matches (sequence): :data:`ClassMatches` per class.
        iou_thr (float): ``tau`` the matches were made at. Defaults to 0.5.
        ties (str): ``'split'`` (official) or ``'together'``:
            :func:`~.lrp.optimal_lrp`. Defaults to 'split'.

    Returns:
        list: per class the dict of :func:`~.lrp.optimal_lrp`
        (``threshold`` is ``s*``, ``inf`` for a class without a correct
        detection: :func:`thresholds_of` says what to apply) with
        ``num_gt``, or None for a class without ground truth
        (nothing to choose a threshold by).
    """
    return [
        dict(optimal_lrp(s, tp, iou, n, iou_thr, ties), num_gt=n) if n
        else None
        for s, tp, iou, n in matches
    ]


def lrp_at_thresholds(matches: Sequence[ClassMatches],
                      thresholds: Sequence[float],
                      iou_thr: float = 0.5) -> Dict[str, object]:
    """LRP of each class with its detections scoring ``>= thresholds[c]``.

    .. math::

        \\mathrm{LRP} = \\frac{\\sum_{TP} \\frac{1 - \\mathrm{IoU}}
        {1 - \\tau} + N_{FP} + N_{FN}}{N_{TP} + N_{FP} + N_{FN}}

    Args:
        matches (sequence): :data:`ClassMatches` per class.
        thresholds (sequence of float): Per class (``inf``: keep none).
        iou_thr (float): ``tau``. Defaults to 0.5.

    Returns:
        dict: ``LRP``, ``LRP_loc``, ``LRP_FP``, ``LRP_FN``: means over the
        classes with ground truth where defined (NaN if for none), and
        ``classes``: per class a dict of the four with ``num_tp``, ``num_fp``,
        ``num_gt`` (None without ground truth).
    """
    if len(thresholds) != len(matches):
        raise ValueError(f'{len(thresholds)} thresholds for '
                         f'{len(matches)} classes')
    per_class: List[Optional[dict]] = []
    for (scores, is_tp, ious, num_gt), thr in zip(matches, thresholds):
        if num_gt == 0:
            per_class.append(None)
            continue
        keep = scores >= thr
        tp = int((keep & is_tp).sum())
        fp = int((keep & ~is_tp).sum())
        loc = float((1.0 - ious[keep & is_tp]).sum())
        per_class.append(dict(
            LRP=(loc / (1.0 - iou_thr) + fp + num_gt - tp) / (num_gt + fp),
            LRP_loc=loc / tp if tp else float('nan'),
            LRP_FP=fp / (tp + fp) if tp + fp else float('nan'),
            LRP_FN=(num_gt - tp) / num_gt,
            num_tp=tp, num_fp=fp, num_gt=num_gt))
    out: Dict[str, object] = {}
    for key in ('LRP', 'LRP_loc', 'LRP_FP', 'LRP_FN'):
        values = np.array([r[key] for r in per_class if r is not None],
                          dtype=np.float64)
        values = values[~np.isnan(values)]
        out[key] = float(values.mean()) if values.size else float('nan')
    out['classes'] = per_class
    return out


def keep_above(detections: Sequence[dict],
               thresholds: Sequence[float]) -> List[dict]:
    """The detections of each image whose score reaches their class's
    threshold (``thresholds[label]``; ``-inf`` keeps all, ``inf`` none).

    Args:
        detections (sequence of dict): Per image ``bboxes`` (N, 4),
            ``scores`` (N,), ``labels`` (N,), other keys kept as they are.
        thresholds (sequence of float): One per class.

    Returns:
        list of dict: The same images, each with the kept rows.
    """
    thr = np.asarray(thresholds, dtype=np.float64)
    out = []
    for det in detections:
        scores = np.asarray(det['scores'], dtype=np.float64).reshape(-1)
        labels = np.asarray(det['labels']).reshape(-1).astype(int)
        keep = scores >= thr[labels]
        out.append(dict(
            det, scores=scores[keep], labels=labels[keep],
            bboxes=np.asarray(det['bboxes'],
                              dtype=np.float64).reshape(-1, 4)[keep]))
    return out


def thresholds_of(optimal: Sequence[Optional[dict]],
                  no_tp: str = 'keep') -> List[float]:
    """Per class the threshold to apply from :func:`lrp_optimal_thresholds`:
    ``s*``; ``-inf`` (keep all) for a class without ground truth; for a
    class without a correct detection (``s* = inf``) ``-inf`` with
    ``no_tp='keep'`` (the official code) or ``inf`` (keep none) with
    ``'drop'``."""
    if no_tp not in ('keep', 'drop'):
        raise ValueError(f"no_tp must be 'keep' or 'drop', got {no_tp!r}")
    return [-np.inf if o is None or (o['threshold'] == np.inf and
                                     no_tp == 'keep') else o['threshold']
            for o in optimal]


def calibrate_detections(detections: Sequence[dict],
                         calibrations: Sequence[Optional[dict]]
                         ) -> List[dict]:
    """The detections with each score mapped by its class's calibration.

    Args:
        detections (sequence of dict): Per image ``scores`` (N,),
            ``labels`` (N,) and any other keys (kept).
        calibrations (sequence): Per class None (scores kept) or
            ``dict(type='platt', a=, b=)`` / ``dict(type='isotonic', x=,
            y=)`` (as ``ClassScoreThresholdHook`` takes them).

    Returns:
        list of dict: The same images, scores mapped (in [0, 1]).
    """
    out = []
    for det in detections:
        scores = np.asarray(det['scores'], dtype=np.float64).reshape(-1)
        labels = np.asarray(det['labels']).reshape(-1).astype(int)
        mapped = scores.copy()
        for c in np.unique(labels):
            cal = calibrations[c]
            sel = labels == c
            if cal is None:
                continue
            if cal['type'] == 'platt':
                mapped[sel] = apply_platt(scores[sel], cal['a'], cal['b'])
            else:
                mapped[sel] = apply_isotonic(scores[sel], np.asarray(cal['x']),
                                             np.asarray(cal['y']))
        out.append(dict(det, scores=np.clip(mapped, 0.0, 1.0)))
    return out


def fit_calibrations(detections: Sequence[dict],
                     ground_truths: Sequence[dict],
                     num_classes: int,
                     kind: str,
                     iou_thr: float = 0.0,
                     pooled: bool = False) -> Tuple[List[Optional[dict]],
                                                    List[str]]:
    """Calibrations fitted to LaECE's IoU targets
    (:func:`~.calibration.laece_targets` at ``iou_thr``) as the official code
    fits them: one per class with ground truth and a detection (others keep
    their scores), or with ``pooled`` one for all those classes' detections.

    Args:
        detections (sequence of dict): Per image ``bboxes``, ``scores``,
            ``labels``.
        ground_truths (sequence of dict): Per image ``bboxes``, ``labels``,
            optionally ``difficult``.
        num_classes (int): Classes ``0 .. num_classes - 1``.
        kind (str): ``'isotonic'``, ``'platt'`` or ``'none'``.
        iou_thr (float): ``tau`` of a hit. Defaults to 0.
        pooled (bool): One calibration for all classes. Defaults to False.

    Returns:
        tuple: per class the calibration dict (None: scores kept), and the
        reasons of fits the data could not support.
    """
    if kind not in ('isotonic', 'platt', 'none'):
        raise ValueError("kind must be 'isotonic', 'platt' or 'none', got "
                         f'{kind!r}')
    calibrations: List[Optional[dict]] = [None] * num_classes
    notes: List[str] = []
    if kind == 'none':
        return calibrations, notes
    scores, targets, labels = laece_targets(detections, ground_truths,
                                            iou_thr)
    counted = np.isin(labels, classes_with_objects(ground_truths))
    groups = [('all classes', counted)] if pooled else \
        [(c, counted & (labels == c)) for c in range(num_classes)]
    for name, sel in groups:
        if not sel.any():
            continue
        if kind == 'isotonic':
            x, y = fit_isotonic(scores[sel], targets[sel])
            cal = dict(type='isotonic', x=x.tolist(), y=y.tolist())
        else:
            try:
                a, b = fit_platt(scores[sel], targets[sel])
            except ValueError as e:
                notes.append(f'class {name}: no Platt fit: {e}')
                continue
            cal = dict(type='platt', a=a, b=b)
        if pooled:
            return [cal] * num_classes, notes
        calibrations[name] = cal
    return calibrations, notes
