"""LRP-Error and optimal LRP (oLRP) of object detections.

Localisation Recall Precision (Oksuz et al., ECCV 2018; TPAMI 2021, "One Metric
to Measure them All"). For one class, the detections scoring at least ``s`` and
the ground truth matched at IoU ``>= tau``:

.. math::

    \\mathrm{LRP}(s) = \\frac{\\sum_{i \\in TP} \\frac{1 - \\mathrm{IoU}_i}
    {1 - \\tau} + N_{FP} + N_{FN}}{N_{TP} + N_{FP} + N_{FN}}

    \\mathrm{oLRP} = \\min_s \\mathrm{LRP}(s), \\qquad
    s^* = \\arg\\min_s \\mathrm{LRP}(s)

moLRP is the mean oLRP over the classes with ground truth; the components at
``s*`` are the mean ``1 - IoU`` of the TPs, ``1 - precision`` and ``1 -
recall``. LRP lies in [0, 1] (0: perfect). Matching, ties and ``s*`` follow the
official code (kemaloksuz/LRP-Error) by default."""
from typing import Dict, Optional, Tuple

import numpy as np

__all__ = ['box_overlaps', 'lrp_match', 'optimal_lrp']

#: How a detection's overlap with an ignored box is measured.
IGNORED_OVERLAPS = ('iof', 'iou')
#: How :func:`optimal_lrp` treats detections of equal score.
TIES = ('split', 'together')


def box_overlaps(boxes: np.ndarray, gts: np.ndarray, offset: float = 0.0,
                 mode: str = 'iou') -> np.ndarray:
    """Overlaps of (N, 4) with (M, 4) xyxy boxes, (N, M) float64.

    Args:
        boxes (np.ndarray): (N, 4) xyxy.
        gts (np.ndarray): (M, 4) xyxy.
        offset (float): Widths are ``x2 - x1 + offset`` (1: VOC's legacy
            pixel convention). Defaults to 0.
        mode (str): ``'iou'`` (intersection over union) or ``'iof'``
            (intersection over the area of ``boxes``, COCO's overlap with a
            crowd region). Defaults to 'iou'.
    """
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    gts = np.asarray(gts, dtype=np.float64).reshape(-1, 4)
    lt = np.maximum(boxes[:, None, :2], gts[None, :, :2])
    rb = np.minimum(boxes[:, None, 2:], gts[None, :, 2:])
    inter = np.clip(rb - lt + offset, 0, None).prod(-1)
    area_b = np.clip(boxes[:, 2:] - boxes[:, :2] + offset, 0, None).prod(-1)
    if mode == 'iof':
        denom = np.broadcast_to(area_b[:, None], inter.shape)
    else:
        area_g = np.clip(gts[:, 2:] - gts[:, :2] + offset, 0,
                         None).prod(-1)
        denom = area_b[:, None] + area_g[None] - inter
    return np.where(denom > 0, inter / np.maximum(denom, 1e-300), 0.0)


def lrp_match(det_bboxes: np.ndarray,
              det_scores: np.ndarray,
              gt_bboxes: np.ndarray,
              ignored_bboxes: Optional[np.ndarray] = None,
              iou_thr: float = 0.5,
              offset: float = 0.0,
              ignored_overlap: str = 'iof',
              max_dets: Optional[int] = None) -> Tuple[np.ndarray,
                                                       np.ndarray]:
    """Matches the detections of one class in one image, as the official LRP
    code (COCO's evaluator) matches them.

    By descending score (stable), the first ``max_dets`` detections each take
    the unmatched ground-truth box of highest IoU ``>= iou_thr`` (the last of
    equals; at 0 any box): a true positive; else one whose overlap with an
    ignored box reaches ``iou_thr`` is ignored; else a false positive.

    Args:
        det_bboxes (np.ndarray): (N, 4) xyxy detections.
        det_scores (np.ndarray): (N,) scores.
        gt_bboxes (np.ndarray): (M, 4) ground truth that counts.
        ignored_bboxes (np.ndarray, optional): (K, 4) ignored ground truth.
        iou_thr (float): IoU ``tau`` needed for a match. Defaults to 0.5.
        offset (float): 0 (MMDetection 3 / COCO) or 1 (VOC legacy pixel
            widths). Defaults to 0.
        ignored_overlap (str): ``'iof'`` (intersection over the detection's
            area, official) or ``'iou'``. Defaults to 'iof'.
        max_dets (int, optional): Detections that count, the highest scoring.
            Defaults to None (all).

    Returns:
        tuple: ``kind`` (N,) int8: 1 true positive, 0 false positive, -1 not
        counted; ``ious`` (N,) float64, each true positive's IoU (0 elsewhere).
        Both in the input order.
    """
    if ignored_overlap not in IGNORED_OVERLAPS:
        raise ValueError(f'ignored_overlap must be one of {IGNORED_OVERLAPS}'
                         f', got {ignored_overlap!r}')
    det_scores = np.asarray(det_scores, dtype=np.float64).reshape(-1)
    n = det_scores.size
    kind = np.full(n, -1, dtype=np.int8)
    ious_out = np.zeros(n, dtype=np.float64)
    if n == 0:
        return kind, ious_out
    order = np.argsort(-det_scores, kind='stable')[:max_dets]
    gt_bboxes = np.asarray(gt_bboxes, dtype=np.float64).reshape(-1, 4)
    ious = box_overlaps(det_bboxes, gt_bboxes, offset)
    used = np.zeros(len(gt_bboxes), dtype=bool)
    if ignored_bboxes is not None and len(ignored_bboxes):
        ign = box_overlaps(det_bboxes, ignored_bboxes, offset,
                           ignored_overlap).max(1) >= iou_thr
    else:
        ign = np.zeros(n, dtype=bool)
    last = len(gt_bboxes) - 1
    for i in order:
        if len(gt_bboxes):
            row = np.where(used, -1.0, ious[i])
            best = last - int(np.argmax(row[::-1]))  # the last of equals
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
                iou_thr: float = 0.5,
                ties: str = 'split') -> Dict[str, float]:
    """oLRP of one class from its matched detections (all images).

    LRP is evaluated down the detections sorted by descending score (stable),
    ``N_FN = num_gt - N_TP``: with ``ties='split'`` (official) after every
    detection (the first minimum's score is ``s*``); with ``'together'`` at
    every distinct score and at "keep nothing" (the highest threshold among
    equal minima). A class without a TP gets oLRP 1 and ``s* = inf``.

    Args:
        scores (np.ndarray): (N,) scores of the detections that count.
        is_tp (np.ndarray): (N,) bool, true positive or false positive.
        tp_ious (np.ndarray): (N,) IoU of each true positive (any value for
            false positives).
        num_gt (int): Ground-truth boxes that count (> 0).
        iou_thr (float): ``tau``. Defaults to 0.5.
        ties (str): ``'split'`` or ``'together'``. Defaults to 'split'.

    Returns:
        dict: ``oLRP``, ``oLRP_loc`` (NaN without a TP at ``s*``), ``oLRP_FP``
        (NaN without a detection at ``s*``), ``oLRP_FN``, ``threshold``
        (``s*``) and ``num_tp``, ``num_fp`` at ``s*``.
    """
    if num_gt <= 0:
        raise ValueError(f'oLRP needs ground truth, got num_gt={num_gt}')
    if ties not in TIES:
        raise ValueError(f'ties must be one of {TIES}, got {ties!r}')
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    is_tp = np.asarray(is_tp, dtype=bool).reshape(-1)
    tp_ious = np.asarray(tp_ious, dtype=np.float64).reshape(-1)
    order = np.argsort(-scores, kind='stable')
    scores, is_tp, tp_ious = scores[order], is_tp[order], tp_ious[order]
    tp = np.cumsum(is_tp)
    fp = np.cumsum(~is_tp)
    none = dict(oLRP=1.0, oLRP_loc=float('nan'), oLRP_FP=float('nan'),
                oLRP_FN=1.0, threshold=float('inf'), num_tp=0, num_fp=0)
    if ties == 'split':
        if not scores.size or tp[-1] == 0:
            return none
        # the official code's sums, in its order of operations
        loc_err = tp - np.cumsum(np.where(is_tp, tp_ious, 0.0))
        lrp = (loc_err / (1 - iou_thr) + fp + (num_gt - tp)) / \
            (tp + fp + (num_gt - tp))
        k = int(np.argmin(lrp))
        ends = np.arange(scores.size)
    else:
        loc_err = np.cumsum(np.where(is_tp, 1.0 - tp_ious, 0.0))
        # last index of each run of equal scores: the sets {score >= s}
        ends = np.flatnonzero(np.r_[scores[1:] != scores[:-1], True]) \
            if scores.size else np.zeros(0, dtype=np.int64)
        tp, fp, loc_err = tp[ends], fp[ends], loc_err[ends]
        lrp = (loc_err / (1.0 - iou_thr) + fp + (num_gt - tp)) / \
            (fp + num_gt)
        # candidate 0 is "keep nothing" (LRP 1), then thresholds descending
        lrp = np.r_[1.0, lrp]
        best = int(np.flatnonzero(lrp <= lrp.min() + 1e-12)[0])
        if best == 0:
            return none
        lrp, k = lrp[1:], best - 1
    n_tp, n_fp = int(tp[k]), int(fp[k])
    return dict(
        oLRP=float(lrp[k]),
        oLRP_loc=float(loc_err[k] / n_tp) if n_tp else float('nan'),
        oLRP_FP=n_fp / (n_tp + n_fp),
        oLRP_FN=(num_gt - n_tp) / num_gt,
        threshold=float(scores[ends[k]]),
        num_tp=n_tp,
        num_fp=n_fp)
