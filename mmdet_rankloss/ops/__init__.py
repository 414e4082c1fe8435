"""Ranking operations shared by every rank loss of the package.

The bottom layer (``docs/architecture.md``): tensor functions only (exact
and blackbox ranks, sort order, sparse re-ranking, soft ranks, the global
gather, leaving autocast) and the hyper-parameter checks every component
uses; no ``nn.Module`` (the SoDeep sorter networks are in
:mod:`mmdet_rankloss.networks.sorters`). Nothing here imports a loss.
"""
from .checks import (check_choice, check_data, check_flag, check_in_range,
                     check_int, check_number, check_positive)
from .device import reads_are_free
from .distributed import gather_for_ranking, get_dist_info_safe
from .precision import autocast_off
from .ranking import (blackbox_rank, blackbox_rank_loss, exact_rank,
                      margin_shift, rank_dtype, subset_rank, subset_rank_at)
from .soft_rank import soft_rank, soft_rank_of

__all__ = [
    'blackbox_rank', 'blackbox_rank_loss', 'exact_rank', 'margin_shift',
    'rank_dtype', 'subset_rank', 'subset_rank_at', 'soft_rank',
    'soft_rank_of', 'gather_for_ranking',
    'get_dist_info_safe', 'check_number', 'check_positive', 'check_in_range',
    'check_int', 'check_choice', 'check_flag', 'check_data',
    'reads_are_free', 'autocast_off'
]
