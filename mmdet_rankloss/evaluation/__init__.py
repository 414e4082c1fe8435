"""Retrieval metrics (an exact, chunked functional core), what detection
scores mean at a threshold (calibration), the optimal LRP of detections and
per-class thresholds; with MMDetection, the registered metrics
``RetrievalMetric`` and ``LRPMetric``.

Everything but the two metric classes needs numpy and torch only.
"""
from ..optional_mmdet import HAS_MMDET
from .calibration import (apply_isotonic, apply_platt, box_iou,
                          classes_with_objects, expected_calibration_error,
                          fit_isotonic, fit_platt, laece, laece_targets,
                          localisation_aware_ece, match_detections,
                          precision_recall_at)
from .class_thresholds import (calibrate_detections, class_matches,
                               fit_calibrations, keep_above, lrp_at_thresholds,
                               lrp_optimal_thresholds, thresholds_of)
from .functional import map_at_r, recall_at_k, retrieval_metrics
from .lrp import box_overlaps, lrp_match, optimal_lrp
from .voc_files import load_detections, load_voc_ground_truth

__all__ = [
    'recall_at_k', 'map_at_r', 'retrieval_metrics', 'box_iou',
    'match_detections', 'precision_recall_at', 'expected_calibration_error',
    'fit_platt', 'apply_platt', 'load_voc_ground_truth', 'load_detections',
    'lrp_match', 'optimal_lrp', 'fit_isotonic', 'apply_isotonic',
    'laece_targets', 'localisation_aware_ece', 'class_matches',
    'lrp_optimal_thresholds', 'lrp_at_thresholds', 'keep_above',
    'box_overlaps', 'laece', 'classes_with_objects', 'thresholds_of',
    'calibrate_detections', 'fit_calibrations'
]

if HAS_MMDET:
    from .lrp_metric import LRPMetric
    from .retrieval_metric import RetrievalMetric
    __all__ += ['LRPMetric', 'RetrievalMetric']
