"""Ranking with a SoDeep sorter: the sorter's ranks and the base class of
the modules that rank with one.

A sorter (:mod:`.sorters`) predicts normalised ranks of rows of exactly
``seq_len`` scores. :func:`sorter_ranks` turns them into rank positions
(padding shorter rows). :class:`SorterRankingBase` is the base class of the
modules that rank with a sorter: it owns one, built from a config or loaded
from a ``save_sorter`` file, frozen by default. Both the retrieval losses of
SoDeep and the detection ranker :class:`~mmdet_rankloss.losses.SorterRanker`
subclass it, so neither imports the other. Like :mod:`.sorters`, this
module imports only ``ops/``; ``losses/`` imports it
(``docs/architecture.md``).
"""
from typing import Optional, Union

import torch
import torch.nn as nn
from torch import Tensor

from ..ops.checks import check_flag, check_number
from ..ops.ranking import rank_dtype
from .sorters import build_sorter, load_sorter

__all__ = ['sorter_ranks', 'SorterRankingBase']


def sorter_ranks(sorter: nn.Module,
                 scores: Tensor,
                 pad_value: Optional[float] = None) -> Tensor:
    """Predicted ranks, in rank positions (1 = highest score), of each row.

    Args:
        sorter (nn.Module): A sorter predicting ranks divided by its
            ``seq_len``.
        scores (Tensor): Rows of scores (Q, L).
        pad_value (float, optional): When ``L < seq_len``, rows are padded
            with this value (it must be below every score, so that the exact
            ranks of the real items are unchanged) and the pads' outputs
            dropped. Defaults to None: ``L`` must equal ``seq_len``.

    Returns:
        Tensor: Ranks (Q, L), fp32 (fp64 for fp64 input to a parameter-free
        sorter).
    """
    seq_len = sorter.seq_len
    length = scores.shape[-1]
    if length != seq_len and (pad_value is None or length > seq_len):
        raise ValueError(
            f'the sorter ranks rows of exactly seq_len={seq_len} scores but '
            f'got rows of length {length} (scores shape '
            f'{tuple(scores.shape)}); for retrieval a row is a query against '
            f'the other B - 1 items, so use batches of {seq_len + 1}, a '
            f'sorter trained with seq_len={length}, or pad_value for shorter '
            'rows')
    work = rank_dtype(scores.dtype)
    weights = next(sorter.parameters(), None)
    rows = scores.to(work if weights is None else weights.dtype)
    if length < seq_len:
        rows = torch.cat(
            [rows, rows.new_full((rows.shape[0], seq_len - length),
                                 pad_value)], 1)
    return sorter(rows)[:, :length].to(work) * seq_len


class SorterRankingBase(nn.Module):
    """Base of the modules that rank with a sorter: holds one, built or
    loaded from a ``save_sorter`` file, and reads its ranks.

    A frozen sorter (the paper's setting) gets ``requires_grad=False`` and
    stays in eval mode, so its BatchNorm statistics never move.

    Args:
        sorter (dict | nn.Module, optional): Sorter config, used when
            ``checkpoint`` is None. Defaults to None: the handcrafted sorter
            of length 100.
        checkpoint (str, optional): A file written by ``save_sorter``; it
            defines the sorter. Defaults to None.
        finetune_sorter (bool): Train the sorter with the model. Defaults to
            False.
        pad_value (float, optional): Pads rows shorter than ``seq_len``;
            must be below every score. Defaults to None.
    """

    def __init__(self,
                 sorter: Union[dict, nn.Module, None] = None,
                 checkpoint: Optional[str] = None,
                 finetune_sorter: bool = False,
                 pad_value: Optional[float] = None) -> None:
        super().__init__()
        owner = type(self).__name__
        if checkpoint:
            self.sorter = load_sorter(checkpoint)
        else:
            self.sorter = build_sorter(
                sorter or dict(type='HandcraftedSorter', seq_len=100))
        if not hasattr(self.sorter, 'seq_len'):
            raise ValueError(f'{owner}: the sorter must have a seq_len '
                             'attribute')
        self.finetune_sorter = check_flag(owner, 'finetune_sorter',
                                          finetune_sorter)
        if not self.finetune_sorter:
            self.sorter.requires_grad_(False)
            self.sorter.eval()
        self.pad_value = None if pad_value is None else check_number(
            owner, 'pad_value', pad_value)

    def train(self, mode: bool = True):
        """A frozen sorter stays in eval mode (BatchNorm statistics)."""
        super().train(mode)
        if not self.finetune_sorter:
            self.sorter.eval()
        return self

    def _ranks(self, scores: Tensor) -> Tensor:
        return sorter_ranks(self.sorter, scores, self.pad_value)
