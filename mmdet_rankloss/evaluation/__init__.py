"""Retrieval metrics (an exact, chunked functional core and a registered
MMEngine metric), what detection scores mean at a threshold (calibration)
the optimal LRP of detections (``LRPMetric``) and per-class thresholds."""
from .calibration import (apply_isotonic, apply_platt, box_iou,
                          expected_calibration_error, fit_isotonic, fit_platt,
                          laece_targets, localisation_aware_ece,
                          match_detections, precision_recall_at)
from .class_thresholds import (class_matches, keep_above, lrp_at_thresholds,
                               lrp_optimal_thresholds)
from .functional import map_at_r, recall_at_k, retrieval_metrics
from .lrp_metric import LRPMetric, lrp_match, optimal_lrp
from .retrieval_metric import RetrievalMetric
from .voc_files import load_detections, load_voc_ground_truth

__all__ = [
    'recall_at_k', 'map_at_r', 'retrieval_metrics', 'RetrievalMetric',
    'box_iou', 'match_detections', 'precision_recall_at',
    'expected_calibration_error', 'fit_platt', 'apply_platt',
    'load_voc_ground_truth', 'load_detections', 'LRPMetric', 'lrp_match',
    'optimal_lrp', 'fit_isotonic', 'apply_isotonic', 'laece_targets',
    'localisation_aware_ece', 'class_matches', 'lrp_optimal_thresholds',
    'lrp_at_thresholds', 'keep_above'
]
