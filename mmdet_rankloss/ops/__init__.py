"""Ranking operations shared by every rank loss of the package."""
from .ranking import blackbox_rank, blackbox_rank_loss, exact_rank, rank_dtype

__all__ = ['blackbox_rank', 'blackbox_rank_loss', 'exact_rank', 'rank_dtype']
