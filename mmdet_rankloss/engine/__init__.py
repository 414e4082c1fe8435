"""Training procedures: the hooks that make a resume exact, fp32 logits
for RaMBO under mixed precision, and per-class score thresholds at test
time."""
from .hooks import DeferredLogHook, RandomStateHook, RankLossMemoryHook
from .precision import RankLogitsFp32Hook, run_in_weight_dtype
from .score_filter import (ClassScoreThresholdHook, filter_instances,
                           thresholds_by_label, wrap_predict)

__all__ = [
    'DeferredLogHook', 'RandomStateHook', 'RankLossMemoryHook',
    'RankLogitsFp32Hook', 'run_in_weight_dtype', 'ClassScoreThresholdHook',
    'filter_instances', 'thresholds_by_label', 'wrap_predict'
]
