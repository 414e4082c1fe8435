"""Training procedures: the hooks that make a resume exact, and fp32 logits
for RaMBO under mixed precision."""
from .hooks import RandomStateHook, RankLossMemoryHook
from .precision import RankLogitsFp32Hook, run_in_weight_dtype

__all__ = [
    'RandomStateHook', 'RankLossMemoryHook', 'RankLogitsFp32Hook',
    'run_in_weight_dtype'
]
