"""Ranking operations shared by every rank loss of the package."""
from .distributed import gather_for_ranking, get_dist_info_safe
from .ranking import (blackbox_rank, blackbox_rank_loss, exact_rank, margin_shift,
                      rank_dtype)

__all__ = [
    'blackbox_rank', 'blackbox_rank_loss', 'exact_rank', 'margin_shift', 'rank_dtype',
    'gather_for_ranking', 'get_dist_info_safe'
]
