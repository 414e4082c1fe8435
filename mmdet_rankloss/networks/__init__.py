"""Networks that losses run: the SoDeep sorters and ranking with them.

The layer between ``ops/`` (tensor functions, no ``nn.Module``) and
``losses/`` (``docs/architecture.md``): it imports only ``ops/``. The SoDeep
losses and ``SorterRanker`` subclass :class:`SorterRankingBase`; the
sorters are built by name from :data:`~.sorters.SORTERS`
(``type='LSTMSorter'`` etc. in configs).
"""
from .sorter_ranking import SorterRankingBase, sorter_ranks
from .sorters import (SORTERS, CNNSorter, HandcraftedSorter, LSTMSorter,
                      build_sorter, load_sorter, normalized_ranks, save_sorter,
                      synthetic_scores)

__all__ = [
    'SorterRankingBase', 'sorter_ranks', 'SORTERS', 'HandcraftedSorter',
    'LSTMSorter', 'CNNSorter', 'build_sorter', 'load_sorter', 'save_sorter',
    'normalized_ranks', 'synthetic_scores'
]
