"""LRP-Error and optimal LRP (oLRP) of object detections.

Localisation Recall Precision (Oksuz et al., ECCV 2018, "Localization Recall
Precision (LRP): A New Performance Metric for Object Detection"), in the form
of Oksuz et al., TPAMI 2021, "One Metric to Measure them All: Localisation
Recall Precision (LRP) for Evaluating Visual Detection Tasks". For one class,
the detections scoring at least ``s`` and the ground truth matched at IoU
``>= tau``:

.. math::

    \\mathrm{LRP}(s) = \\frac{\\sum_{i \\in TP} \\frac{1 - \\mathrm{IoU}_i}
    {1 - \\tau} + N_{FP} + N_{FN}}{N_{TP} + N_{FP} + N_{FN}}

    \\mathrm{oLRP} = \\min_s \\mathrm{LRP}(s), \\qquad
    s^* = \\arg\\min_s \\mathrm{LRP}(s)

and moLRP is the mean of oLRP over the classes that have ground truth. At
the LRP-optimal threshold ``s*`` the components are

.. math::

    \\mathrm{oLRP_{loc}} = \\frac{1}{N_{TP}} \\sum_{i \\in TP}
    (1 - \\mathrm{IoU}_i), \\quad
    \\mathrm{oLRP_{FP}} = \\frac{N_{FP}}{N_{TP} + N_{FP}}, \\quad
    \\mathrm{oLRP_{FN}} = \\frac{N_{FN}}{N_{TP} + N_{FN}}

(mean ``1 - IoU`` of the true positives, ``1 - precision``, ``1 - recall``),
so that ``LRP = (N_TP * loc / (1 - tau) + N_FP + N_FN) / (N_TP + N_FP +
N_FN)``. LRP lies in [0, 1]: 0 for perfect detection, 1 when nothing is
detected correctly.
"""
from typing import Dict, Optional, Tuple

import numpy as np

__all__ = ['lrp_match', 'optimal_lrp']


def _iou(boxes: np.ndarray, gts: np.ndarray, offset: float) -> np.ndarray:
    """IoU of (N, 4) with (M, 4) xyxy boxes; widths are ``x2 - x1 +
    offset`` (offset 1: VOC's legacy pixel convention)."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    gts = np.asarray(gts, dtype=np.float64).reshape(-1, 4)
    lt = np.maximum(boxes[:, None, :2], gts[None, :, :2])
    rb = np.minimum(boxes[:, None, 2:], gts[None, :, 2:])
    inter = np.clip(rb - lt + offset, 0, None).prod(-1)
    area_b = np.clip(boxes[:, 2:] - boxes[:, :2] + offset, 0, None).prod(-1)
    area_g = np.clip(gts[:, 2:] - gts[:, :2] + offset, 0, None).prod(-1)
    union = area_b[:, None] + area_g[None] - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)


def lrp_match(det_bboxes: np.ndarray,
              det_scores: np.ndarray,
              gt_bboxes: np.ndarray,
              ignored_bboxes: Optional[np.ndarray] = None,
              iou_thr: float = 0.5,
              offset: float = 0.0) -> Tuple[np.ndarray, np.ndarray]:
    """Matches the detections of one class in one image.

    Detections are visited by descending score (stable for equal scores);
    each takes the still unmatched ground-truth box of highest IoU if that
    IoU is ``>= iou_thr`` (a true positive). Otherwise, if it overlaps an
    ignored box (VOC ``difficult``, COCO ``iscrowd``) by ``>= iou_thr`` it is
    ignored: neither true nor false positive (an ignored box may absorb any
    number of detections). Otherwise it is a false positive.

    Args:
        det_bboxes (np.ndarray): (N, 4) xyxy detections.
        det_scores (np.ndarray): (N,) scores.
        gt_bboxes (np.ndarray): (M, 4) ground truth that counts.
        ignored_bboxes (np.ndarray, optional): (K, 4) ignored ground truth.
        iou_thr (float): IoU ``tau`` needed for a match. Defaults to 0.5.
        offset (float): 0 (MMDetection 3 / COCO) or 1 (VOC legacy pixel
            widths). Defaults to 0.

    Returns:
        tuple: ``kind`` (N,) int8: 1 true positive, 0 false positive, -1
        ignored; ``ious`` (N,) float64, the IoU of each true positive with
        its ground truth (0 elsewhere). Both in the input order.
    """
    det_scores = np.asarray(det_scores, dtype=np.float64).reshape(-1)
    n = det_scores.size
    kind = np.zeros(n, dtype=np.int8)
    ious_out = np.zeros(n, dtype=np.float64)
    if n == 0:
        return kind, ious_out
    order = np.argsort(-det_scores, kind='stable')
    gt_bboxes = np.asarray(gt_bboxes, dtype=np.float64).reshape(-1, 4)
    ious = _iou(det_bboxes, gt_bboxes, offset)
    used = np.zeros(len(gt_bboxes), dtype=bool)
    if ignored_bboxes is not None and len(ignored_bboxes):
        ign = _iou(det_bboxes, ignored_bboxes, offset).max(1) >= iou_thr
    else:
        ign = np.zeros(n, dtype=bool)
    for i in order:
        if len(gt_bboxes):
            row = np.where(used, -1.0, ious[i])
            best = int(np.argmax(row))
            if row[best] >= iou_thr:
                used[best] = True
                kind[i] = 1
                ious_out[i] = row[best]
                continue
        kind[i] = -1 if ign[i] else 0
    return kind, ious_out


def optimal_lrp(scores: np.ndarray,
                is_tp: np.ndarray,
                tp_ious: np.ndarray,
                num_gt: int,
                iou_thr: float = 0.5) -> Dict[str, float]:
    """oLRP of one class from its matched detections (all images).

    The detections are sorted by score once; the TP count, FP count and
    localisation error ``sum (1 - IoU) / (1 - tau)`` are accumulated and
    LRP is evaluated at every distinct score ``s`` (all detections scoring
    ``>= s`` kept, so equal scores enter together), and at "keep nothing"
    (``s = inf``, LRP 1). With ``G = num_gt``, ``N_FN = G - N_TP`` and the
    denominator is ``N_FP + G``. Among equal minima (to 1e-12) the highest
    threshold wins, so a class whose best LRP is 1 gets ``s* = inf``.

    Args:
        scores (np.ndarray): (N,) scores of the detections that count
            (ignored ones removed).
        is_tp (np.ndarray): (N,) bool, true positive or false positive.
        tp_ious (np.ndarray): (N,) IoU of each true positive (any value for
            false positives).
        num_gt (int): Ground-truth boxes that count (> 0).
        iou_thr (float): ``tau``. Defaults to 0.5.

    Returns:
        dict: ``oLRP``, ``oLRP_loc`` (NaN without a TP at ``s*``),
        ``oLRP_FP`` (NaN without a detection at ``s*``), ``oLRP_FN``,
        ``threshold`` (``s*``) and ``num_tp``, ``num_fp`` at ``s*``.
    """
    if num_gt <= 0:
        raise ValueError(f'oLRP needs ground truth, got num_gt={num_gt}')
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    is_tp = np.asarray(is_tp, dtype=bool).reshape(-1)
    tp_ious = np.asarray(tp_ious, dtype=np.float64).reshape(-1)
    order = np.argsort(-scores, kind='stable')
    scores, is_tp, tp_ious = scores[order], is_tp[order], tp_ious[order]
    tp = np.cumsum(is_tp)
    fp = np.cumsum(~is_tp)
    loc_err = np.cumsum(np.where(is_tp, 1.0 - tp_ious, 0.0))
    # last index of each run of equal scores: the sets {score >= s}
    ends = np.flatnonzero(np.r_[scores[1:] != scores[:-1], True]) \
        if scores.size else np.zeros(0, dtype=np.int64)
    tp, fp, loc_err = tp[ends], fp[ends], loc_err[ends]
    lrp = (loc_err / (1.0 - iou_thr) + fp + (num_gt - tp)) / (fp + num_gt)
    # candidate 0 is "keep nothing" (LRP 1), then thresholds descending
    lrp = np.r_[1.0, lrp]
    best = int(np.flatnonzero(lrp <= lrp.min() + 1e-12)[0])
    if best == 0:
        return dict(oLRP=1.0, oLRP_loc=float('nan'), oLRP_FP=float('nan'),
                    oLRP_FN=1.0, threshold=float('inf'), num_tp=0, num_fp=0)
    k = best - 1
    n_tp, n_fp = int(tp[k]), int(fp[k])
    return dict(
        oLRP=float(lrp[best]),
        oLRP_loc=float(loc_err[k] / n_tp) if n_tp else float('nan'),
        oLRP_FP=n_fp / (n_tp + n_fp),
        oLRP_FN=(num_gt - n_tp) / num_gt,
        threshold=float(scores[ends[k]]),
        num_tp=n_tp,
        num_fp=n_fp)
