"""The score memory of the RaMBO losses (section 4.3 of the paper).

A rank loss on a small batch ranks few elements; RaMBO ranks the current
batch together with the detached scores (or embeddings) of the last few
training batches. :class:`ScoreMemory` holds them for the AP loss (ranked
scores and their one-hot targets) and the recall loss (embeddings and their
labels) alike.

It is a plain Python object, not a registered buffer: DDP broadcasts
buffers from process 0, which would overwrite each process's memory, and
a model checkpoint would carry stale scores into a fine-tune. For an exact
resume, a loss that owns a memory exposes ``memory_state_dict()`` and
``load_memory_state_dict()`` (:class:`ScoreMemoryMixin`), which a
checkpoint hook can save beside the model; the state holds plain tensors
and lists only, so it loads with ``torch.load(weights_only=True)``.
"""
from collections import deque
from typing import Dict, Iterator, Optional, Tuple

import torch
from torch import Tensor

from ..ops.checks import check_int

__all__ = ['ScoreMemory', 'ScoreMemoryMixin']

Entry = Tuple[Tensor, Tensor]


class ScoreMemory:
    """The last ``size`` batches of ``(values, targets)``, oldest first.

    ``values`` are (N, ...) float tensors (scores or embeddings), ``targets``
    their (N, ...) ground truth. Entries are stored detached. :meth:`read`
    concatenates them, after forgetting everything when the new batch no
    longer matches (trailing shape, device or dtype of ``values``), e.g. a
    head with another class count or a model moved to another device.

    Args:
        size (int): Batches kept, >= 0 (0 keeps nothing).
        owner (str): Component named in error messages. Defaults to
            ``'ScoreMemory'``.
    """

    def __init__(self, size: int, owner: str = 'ScoreMemory') -> None:
        self.size = check_int(owner, 'memory', size)
        self._entries = deque(maxlen=self.size)
        # set by load_state_dict: move loaded entries to the first batch's
        # device instead of forgetting them (checkpoints load on the CPU)
        self._relocate = False

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._entries)

    def __getitem__(self, index: int) -> Entry:
        return self._entries[index]

    def __repr__(self) -> str:
        return f'ScoreMemory(size={self.size}, stored={len(self)})'

    def reset(self) -> None:
        """Forget all stored batches."""
        self._entries.clear()
        self._relocate = False

    def append(self, values: Tensor, targets: Tensor) -> None:
        """Store one batch (detached); the oldest drops out when full.

        Stored batches that do not match it (as in :meth:`read`) are
        forgotten first, so the memory never mixes devices or shapes.
        """
        if self.size:
            self._match(values)
            self._entries.append((values.detach(), targets.detach()))

    def _match(self, like: Tensor) -> None:
        """Move loaded entries to ``like``'s device (once, after
        :meth:`load_state_dict`), then forget them all if their trailing
        shape, device or dtype differ from ``like``'s."""
        if not self._entries:
            return
        old = self._entries[0][0]
        if self._relocate and old.shape[1:] == like.shape[1:] \
                and old.dtype == like.dtype:
            self._entries = deque(
                ((v.to(like.device), t.to(like.device))
                 for v, t in self._entries), maxlen=self.size)
            old = self._entries[0][0]
        self._relocate = False
        if (old.shape[1:] != like.shape[1:] or old.device != like.device
                or old.dtype != like.dtype):
            self.reset()

    def read(self, like: Tensor) -> Optional[Entry]:
        """Stored values and targets, concatenated along dim 0.

        Args:
            like (Tensor): The current batch's values; the memory is reset
                first when its trailing shape, device or dtype differ from
                the stored ones.

        Returns:
            tuple[Tensor, Tensor] | None: ``(values, targets)`` or None
            when nothing is stored.
        """
        self._match(like)
        if not self._entries:
            return None
        return (torch.cat([v for v, _ in self._entries]),
                torch.cat([t for _, t in self._entries]))

    def state_dict(self) -> Dict[str, object]:
        """Plain state: ``size`` and the lists ``values`` and ``targets``."""
        return dict(
            size=self.size,
            values=[v for v, _ in self._entries],
            targets=[t for _, t in self._entries])

    def load_state_dict(self, state: Dict[str, object]) -> None:
        """Restore :meth:`state_dict`; keeps the newest ``size`` entries.

        Loaded tensors may sit on another device (a checkpoint mapped to
        the CPU): the next :meth:`read` moves them to the batch's device
        rather than forgetting them.

        Raises:
            ValueError: When the state is not a memory state.
        """
        if not isinstance(state, dict) or not {'values', 'targets'} <= set(
                state) or len(state['values']) != len(state['targets']):
            raise ValueError('ScoreMemory.load_state_dict needs a dict with '
                             'lists "values" and "targets" of equal length, '
                             f'got {type(state).__name__}')
        self.reset()
        for values, targets in zip(state['values'], state['targets']):
            if not isinstance(values, Tensor) or \
                    not isinstance(targets, Tensor):
                raise ValueError('ScoreMemory state entries must be tensors')
            self.append(values, targets)
        self._relocate = bool(self._entries)


class ScoreMemoryMixin:
    """Memory API of a loss module that keeps its memory in ``_memory``.

    The method names are a contract: a checkpoint hook finds the modules
    with a memory by ``memory_state_dict`` / ``load_memory_state_dict``.
    """

    _memory: ScoreMemory

    def reset_memory(self) -> None:
        """Forget all stored batches."""
        self._memory.reset()

    def memory_state_dict(self) -> dict:
        """The memory's plain state (see :meth:`ScoreMemory.state_dict`)."""
        return self._memory.state_dict()

    def load_memory_state_dict(self, state: dict) -> None:
        """Restore a state from :meth:`memory_state_dict`."""
        self._memory.load_state_dict(state)
