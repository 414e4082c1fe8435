"""Retrieval metrics (an exact, chunked functional core and a registered
MMEngine metric), what detection scores mean at a threshold (calibration)
and the optimal LRP of detections (``LRPMetric``)."""
from .calibration import (apply_platt, box_iou, expected_calibration_error,
                          fit_platt, match_detections, precision_recall_at)
from .functional import map_at_r, recall_at_k, retrieval_metrics
from .lrp_metric import LRPMetric, lrp_match, optimal_lrp
from .retrieval_metric import RetrievalMetric
from .voc_files import load_detections, load_voc_ground_truth

__all__ = [
    'recall_at_k', 'map_at_r', 'retrieval_metrics', 'RetrievalMetric',
    'box_iou', 'match_detections', 'precision_recall_at',
    'expected_calibration_error', 'fit_platt', 'apply_platt',
    'load_voc_ground_truth', 'load_detections', 'LRPMetric', 'lrp_match',
    'optimal_lrp'
]
