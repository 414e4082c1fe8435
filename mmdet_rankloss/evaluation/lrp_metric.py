"""``LRPMetric``: the optimal LRP (:mod:`.lrp`) of a detector's predictions,
as an MMEngine metric."""
from collections import OrderedDict
from typing import Dict, List, Optional, Sequence

import numpy as np
from mmengine.evaluator import BaseMetric
from mmengine.logging import MMLogger

from mmdet.registry import METRICS
from .lrp import IGNORED_OVERLAPS, TIES, lrp_match, optimal_lrp

__all__ = ['LRPMetric']


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
    """Optimal LRP (moLRP) and its components, per class and averaged
    (docs/thresholds.md#lrp-one-number-for-detection-and-a-threshold-per-class).

    Consumes ``predict`` data samples as :class:`mmdet.evaluation.VOCMetric`
    does: ``pred_instances``, ``gt_instances`` and, where present,
    ``ignored_instances`` (difficult / crowd: neither TP nor FP, not ground
    truth); classes from ``dataset_meta['classes']``. Matching, ties and ``s*``
    follow the official code (kemaloksuz/LRP-Error) by default
    (:func:`lrp_match`, :func:`optimal_lrp`).

    Results (in [0, 1], lower is better; ``lrp/oLRP`` with the default prefix):
    ``oLRP``, the mean over classes with ground truth of their oLRP (1 without
    a correct detection); ``oLRP_loc``, ``oLRP_FP``, ``oLRP_FN`` at each
    class's ``s*`` (a component undefined for a class left out of its mean);
    ``oLRP_<class>`` with ``classwise``. The thresholds ``s*`` (keep a score
    ``>= s*``) are kept in :attr:`optimal_thresholds` (class name -> float)
    and, with all components, :attr:`class_results`.

    Args:
        iou_thr (float): IoU ``tau`` for a true positive, in [0, 1). Defaults
            to 0.5.
        ties (str): ``'split'`` (official) or ``'together'``:
            :func:`optimal_lrp`. Defaults to 'split'.
        ignored_overlap (str): ``'iof'`` (official) or ``'iou'``:
            :func:`lrp_match`. Defaults to 'iof'.
        max_dets (int, optional): Detections per image and class that count
            (None: all). Defaults to 100.
        use_legacy_coordinate (bool): Widths ``x2 - x1 + 1`` (VOC's pixel
            convention) instead of ``x2 - x1``. Defaults to False.
        classwise (bool): Also return ``oLRP_<class>``. Defaults to False.
        collect_device (str): Device used to gather results across ranks.
            Defaults to 'cpu'.
        prefix (str, optional): Prefix of the metric names. Defaults to None
            (``'lrp'``).
    """
    default_prefix: Optional[str] = 'lrp'

    def __init__(self,
                 iou_thr: float = 0.5,
                 ties: str = 'split',
                 ignored_overlap: str = 'iof',
                 max_dets: Optional[int] = 100,
                 use_legacy_coordinate: bool = False,
                 classwise: bool = False,
                 collect_device: str = 'cpu',
                 prefix: Optional[str] = None) -> None:
        super().__init__(collect_device=collect_device, prefix=prefix)
        if not 0.0 <= float(iou_thr) < 1.0:
            raise ValueError(f'iou_thr must lie in [0, 1), got {iou_thr!r}')
        if ties not in TIES or ignored_overlap not in IGNORED_OVERLAPS:
            raise ValueError(f'ties must be one of {TIES} and ignored_overlap '
                             f'one of {IGNORED_OVERLAPS}, got {ties!r} and '
                             f'{ignored_overlap!r}')
        self.iou_thr = float(iou_thr)
        self.ties = ties
        self.ignored_overlap = ignored_overlap
        self.max_dets = max_dets
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
                                       self.offset, self.ignored_overlap,
                                       self.max_dets)
                keep = kind >= 0
                per_class[c] = (scores[keep], kind[keep] == 1, ious[keep],
                                int(g.sum()))
            self.results.append((_field(sample, 'img_id'), per_class))

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
        try:  # the official order of images: by id
            results = sorted(results, key=lambda r: r[0])
        except TypeError:  # ids missing or of mixed types: as processed
            pass
        for _, image in results:
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
                self.iou_thr, self.ties)
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
