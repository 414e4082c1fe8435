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
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from mmengine.evaluator import BaseMetric
from mmengine.logging import MMLogger

from mmdet.registry import METRICS

__all__ = ['LRPMetric', 'lrp_match', 'optimal_lrp']


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


def _field(obj, key, default=None):
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def _np(x, shape_tail=()) -> np.ndarray:
    if x is None:
        return np.zeros((0, ) + shape_tail)
    if hasattr(x, 'detach'):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


@METRICS.register_module()
class LRPMetric(BaseMetric):
    """Optimal LRP (moLRP) and its components, per class and averaged.

    Consumes the data samples MMDetection's detectors return in ``predict``
    mode, as :class:`mmdet.evaluation.VOCMetric` does: ``pred_instances``
    (``bboxes`` xyxy, ``scores``, ``labels``), ``gt_instances`` (``bboxes``,
    ``labels``) and, where present, ``ignored_instances`` (VOC ``difficult``
    / COCO ``iscrowd`` boxes, matched but neither TP nor FP, and not counted
    as ground truth). Class names come from ``dataset_meta['classes']``, so
    it works on VOC-style and COCO-style datasets alike. Matching and the
    search for the optimal threshold: :func:`lrp_match`,
    :func:`optimal_lrp`.

    Results (floats in [0, 1], lower is better; ``lrp/oLRP`` with the
    default prefix):

    * ``oLRP``: moLRP, the mean over classes with ground truth of the
      class's oLRP (a class with ground truth and no correct detection has
      oLRP 1; classes without ground truth are left out, whatever they
      detect);
    * ``oLRP_loc``, ``oLRP_FP``, ``oLRP_FN``: the means over the same
      classes of the components at each class's LRP-optimal threshold; a
      component that is undefined for a class (``loc`` without a TP,
      ``FP`` without a detection at ``s*``) is left out of its mean (NaN
      when no class defines it);
    * ``oLRP_<class>`` for each class with ground truth if ``classwise``.

    The LRP-optimal thresholds ``s*`` (a box is kept if its score is ``>=
    s*``; ``inf``: keep none) are logged with the per-class table and kept
    after :meth:`evaluate` in :attr:`optimal_thresholds` (class name ->
    float) and, with all components, in :attr:`class_results`.

    Args:
        iou_thr (float): IoU ``tau`` for a true positive, in [0, 1).
            Defaults to 0.5.
        use_legacy_coordinate (bool): Widths ``x2 - x1 + 1`` (VOC's pixel
            convention, as ``VOCMetric`` computes its AP) instead of ``x2 -
            x1``. Defaults to False.
        classwise (bool): Also return ``oLRP_<class>``. Defaults to False.
        collect_device (str): Device used to gather results across ranks.
            Defaults to 'cpu'.
        prefix (str, optional): Prefix of the metric names. Defaults to
            None (``'lrp'``).
    """
    default_prefix: Optional[str] = 'lrp'

    def __init__(self,
                 iou_thr: float = 0.5,
                 use_legacy_coordinate: bool = False,
                 classwise: bool = False,
                 collect_device: str = 'cpu',
                 prefix: Optional[str] = None) -> None:
        super().__init__(collect_device=collect_device, prefix=prefix)
        if not 0.0 <= float(iou_thr) < 1.0:
            raise ValueError(f'iou_thr must lie in [0, 1), got {iou_thr!r}')
        self.iou_thr = float(iou_thr)
        self.offset = 1.0 if use_legacy_coordinate else 0.0
        self.classwise = bool(classwise)
        self.optimal_thresholds: Dict[str, float] = {}
        self.class_results: Dict[str, Dict[str, float]] = {}

    def process(self, data_batch: dict, data_samples: Sequence[dict]) -> None:
        """Matches each image's detections and keeps, per class, the scores,
        TP flags, TP IoUs and ground-truth count (the boxes are not kept).

        Args:
            data_batch (dict): A batch from the dataloader (unused).
            data_samples (Sequence[dict]): Data samples with
                ``pred_instances``, ``gt_instances`` and optionally
                ``ignored_instances``.
        """
        num_classes = len(self.dataset_meta['classes'])
        for sample in data_samples:
            pred = _field(sample, 'pred_instances')
            gt = _field(sample, 'gt_instances')
            ign = _field(sample, 'ignored_instances')
            p_boxes = _np(_field(pred, 'bboxes'), (4, )).reshape(-1, 4)
            p_scores = _np(_field(pred, 'scores')).reshape(-1)
            p_labels = _np(_field(pred, 'labels')).reshape(-1)
            g_boxes = _np(_field(gt, 'bboxes'), (4, )).reshape(-1, 4)
            g_labels = _np(_field(gt, 'labels')).reshape(-1)
            i_boxes = _np(_field(ign, 'bboxes'), (4, )).reshape(-1, 4)
            i_labels = _np(_field(ign, 'labels')).reshape(-1)
            per_class = {}
            for c in range(num_classes):
                d = p_labels == c
                g = g_labels == c
                if not d.any() and not g.any():
                    continue
                scores = p_scores[d].astype(np.float64)
                kind, ious = lrp_match(p_boxes[d], scores, g_boxes[g],
                                       i_boxes[i_labels == c], self.iou_thr,
                                       self.offset)
                keep = kind >= 0
                per_class[c] = (scores[keep], kind[keep] == 1, ious[keep],
                                int(g.sum()))
            self.results.append(per_class)

    def compute_metrics(self, results: list) -> Dict[str, float]:
        """moLRP and its components over all processed images.

        Args:
            results (list): What :meth:`process` kept, from all ranks.

        Returns:
            dict: ``oLRP``, ``oLRP_loc``, ``oLRP_FP``, ``oLRP_FN`` and, if
            ``classwise``, ``oLRP_<class>``.
        """
        logger: MMLogger = MMLogger.get_current_instance()
        classes = list(self.dataset_meta['classes'])
        per_class: Dict[int, List[tuple]] = {}
        for image in results:
            for c, item in image.items():
                per_class.setdefault(c, []).append(item)
        self.optimal_thresholds = {}
        self.class_results = {}
        for c, items in sorted(per_class.items()):
            num_gt = sum(item[3] for item in items)
            if num_gt == 0:
                continue  # no ground truth: left out of moLRP
            out = optimal_lrp(
                np.concatenate([item[0] for item in items]),
                np.concatenate([item[1] for item in items]),
                np.concatenate([item[2] for item in items]), num_gt,
                self.iou_thr)
            out['num_gt'] = num_gt
            self.class_results[classes[c]] = out
            self.optimal_thresholds[classes[c]] = out['threshold']
        eval_results: Dict[str, float] = OrderedDict()
        keys = ('oLRP', 'oLRP_loc', 'oLRP_FP', 'oLRP_FN')
        for key in keys:
            values = np.array([r[key] for r in self.class_results.values()],
                              dtype=np.float64)
            values = values[~np.isnan(values)]
            eval_results[key] = float(values.mean()) if values.size \
                else float('nan')
        if self.classwise:
            for name, r in self.class_results.items():
                eval_results[f'oLRP_{name}'] = r['oLRP']
        lines = [f'LRP (tau={self.iou_thr}): per class at its LRP-optimal '
                 'threshold s*',
                 f'{"class":>16} {"gt":>6} {"oLRP":>7} {"loc":>7} '
                 f'{"FP":>7} {"FN":>7} {"s*":>9}']
        for name, r in self.class_results.items():
            lines.append(f'{str(name):>16} {r["num_gt"]:>6d} '
                         f'{r["oLRP"]:>7.4f} {r["oLRP_loc"]:>7.4f} '
                         f'{r["oLRP_FP"]:>7.4f} {r["oLRP_FN"]:>7.4f} '
                         f'{r["threshold"]:>9.4g}')
        lines.append(f'{"mean":>16} {"":>6} ' + ' '.join(
            f'{eval_results[k]:>7.4f}' for k in keys))
        logger.info('\n'.join(lines))
        return eval_results
