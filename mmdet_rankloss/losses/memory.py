"""The score memory of the RaMBO losses (section 4.3 of the paper).

:class:`ScoreMemory` keeps the detached scores (or embeddings) of the last
training batches, ranked with the current one: a preallocated buffer written in
place (CUDA-graph replay, one ``torch.compile`` graph). It is not a registered
buffer (DDP would broadcast process 0's, a checkpoint would carry stale
scores); :class:`ScoreMemoryMixin` gives the state for a checkpoint hook (plain
tensors, ``torch.load(weights_only=True)``)."""
import math
from typing import Dict, Iterator, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from ..ops.checks import check_int

__all__ = ['ScoreMemory', 'ScoreMemoryMixin']

Entry = Tuple[Tensor, Tensor]


class ScoreMemory:
    """The last ``size`` batches of ``(values, targets)``, oldest first.

    ``values`` (N, ...) floats and their ``targets`` (N, ...) are stored
    detached in two flat buffers read as (size, capacity, ...): a slot holds a
    batch's rows, then padding (``values`` ``fill``; ``targets`` False, or an
    integer dtype's minimum: :meth:`is_padding`). An empty, filling and full
    memory have one shape. The capacity is :meth:`reserve`'s rows, else the
    first batch's (a larger batch enlarges it once); a batch of another
    trailing shape, device or dtype makes the memory forget all first.

    Args:
        size (int): Batches kept, >= 0 (0 keeps nothing).
        owner (str): Component named in error messages. Defaults to
            ``'ScoreMemory'``.
        fill (float): The padding of ``values``. Defaults to 0.
    """

    def __init__(self, size: int, owner: str = 'ScoreMemory',
                 fill: float = 0.) -> None:
        self.size = check_int(owner, 'memory', size)
        self.owner = owner
        self.fill = fill
        self._reserved = None  # (rows, trails, dtypes) of reserve()
        self._forget()

    def __len__(self) -> int:
        """Batches stored (a host read off the CPU)."""
        if self._count is None:
            return 0
        return int(self._count.clamp(max=self.size))

    def __iter__(self) -> Iterator[Entry]:
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index: int) -> Entry:
        """A copy of the ``index``-th stored batch, oldest first, padded
        to the capacity."""
        stored = len(self)
        if not -stored <= index < stored:
            raise IndexError(f'{self.owner} memory holds {stored} batches, '
                             f'no index {index}')
        slot = self.size - stored + index % stored
        return tuple(t[slot].clone() for t in self._buffers())

    def __repr__(self) -> str:
        return f'ScoreMemory(size={self.size}, stored={len(self)})'

    def reserve(self, rows: int, trails: Tuple[Tuple[int, ...], ...],
                dtypes: Tuple[torch.dtype, torch.dtype],
                device='cpu') -> None:
        """Allocate empty buffers (all padding) before the first batch, so that
        a compiled caller traces one graph from its first call on.

        Args:
            rows (int): The capacity, >= 1: the largest batch expected.
            trails (tuple[tuple[int, ...], tuple[int, ...]]): The trailing
                shapes of ``values`` and ``targets`` (a row's shape).
            dtypes (tuple[torch.dtype, torch.dtype]): Their dtypes.
            device (str | torch.device): Where. Defaults to the CPU.
        """
        self._reserved = (check_int(self.owner, 'memory rows', rows, 1),
                          tuple(tuple(int(d) for d in t) for t in trails),
                          tuple(dtypes))
        if self.size:
            self._forget()
            self._allocate(*self._reserved, device)

    @property
    def device(self) -> Optional[torch.device]:
        """Where the buffers are (None before they exist)."""
        return None if self._flat is None else self._flat[0].device

    def to(self, device) -> None:
        """Move the buffers (stored batches kept) to ``device``; buffers
        on ``meta`` hold no values and become empty ones there."""
        device = torch.device(device)
        if self._flat is None or self._flat[0].device == device:
            return
        if self._flat[0].is_meta:
            self._allocate(self._cap, self._trails,
                           tuple(t.dtype for t in self._flat), device,
                           keep=False)
        else:
            self._flat = tuple(t.to(device) for t in self._flat)
            self._count = self._count.to(device)

    def follow(self, device) -> None:
        """:meth:`to` with the owning module, except for a loaded state not yet
        read (the first batch moves it) and for ``meta`` (the buffers go)."""
        if self._flat is None or self._relocate:
            return
        if torch.device(device).type == 'meta':
            self._forget()
        else:
            self.to(device)

    def reset(self) -> None:
        """Forget all stored batches: the buffers go, or, reserved, become
        all padding in place (same tensors, same capacity)."""
        if self._reserved is None or self._flat is None:
            self._forget()
            return
        for flat, fill in zip(self._flat, self._fills()):
            flat.fill_(fill)
        self._count.zero_()
        self._relocate = False

    def _forget(self) -> None:
        """Drop the buffers (the next append allocates them anew)."""
        self._flat = self._count = None  # the buffers, their fill count
        self._cap, self._trails = 0, ((), ())
        # set by load_state_dict: move loaded entries to the first batch's
        # device instead of forgetting them (checkpoints load on the CPU)
        self._relocate = False

    def is_padding(self, targets: Tensor) -> Tensor:
        """Whether each row of stored ``targets`` (as :meth:`read` gives
        them) is padding; only for integer (label) targets."""
        return targets == torch.iinfo(targets.dtype).min

    def _padded(self, tensor: Tensor, rows: int, fill) -> Tensor:
        """``tensor`` with padding rows appended up to ``rows``."""
        return F.pad(tensor, (0, 0) * (tensor.dim() - 1) +
                     (0, rows - tensor.shape[0]), value=fill)

    @staticmethod
    def _target_fill(dtype: torch.dtype):
        if dtype == torch.bool or dtype.is_floating_point:
            return 0
        return torch.iinfo(dtype).min

    def _fills(self) -> Tuple[object, object]:
        """The padding of the two buffers."""
        return self.fill, self._target_fill(self._flat[1].dtype)

    def _buffers(self) -> Entry:
        """The buffers as (size, capacity, ...) views."""
        return tuple(
            flat.view((self.size, self._cap) + trail)
            for flat, trail in zip(self._flat, self._trails))

    def _allocate(self, rows: int, trails, dtypes, device,
                  keep: bool = True) -> None:
        """Buffers of capacity ``rows`` of the given trailing shapes and
        dtypes, keeping (``keep``) what is stored (padded)."""
        old = self._buffers() if keep and self._flat is not None else None
        self._cap, self._trails = int(rows), tuple(trails)
        fills = (self.fill, self._target_fill(dtypes[1]))
        self._flat = tuple(
            torch.full((self.size * self._cap * math.prod(trail), ), fill,
                       dtype=dtype, device=device)
            for trail, dtype, fill in zip(self._trails, dtypes, fills))
        if old is None:
            self._count = torch.zeros((), dtype=torch.long, device=device)
            return
        for flat, kept, fill in zip(self._flat, old, fills):
            flat.copy_(self._padded(kept.transpose(0, 1), self._cap,
                                    fill).transpose(0, 1).flatten())

    def append(self, values: Tensor, targets: Tensor) -> None:
        """Store one batch (detached, copied); the oldest drops out. Stored
        batches that do not match it (as in :meth:`read`) are forgotten first.
        """
        if not self.size:
            return
        self._match(values)
        rows = values.shape[0]
        if self._flat is None or rows > self._cap:
            self._allocate(
                rows, tuple(tuple(int(d) for d in t.shape[1:])
                            for t in (values, targets)),
                (values.dtype, targets.dtype), values.device)
        cap = self._cap
        # padded to the capacity; traced always, so a trace holds any N
        pad = torch.compiler.is_compiling() or rows < cap
        # written flat: a buffer that a compiled call returns is then no
        # view (whose base's shape Dynamo would guard)
        for flat, buffer, new, fill in zip(self._flat, self._buffers(),
                                           (values, targets), self._fills()):
            new = new.detach().to(flat.device, flat.dtype)
            if pad:
                new = self._padded(new, cap, fill)
            flat.copy_(torch.cat([buffer[1:], new[None]]).flatten())
        self._count.add_(1)

    def _match(self, like: Tensor) -> None:
        """Move loaded entries to ``like``'s device (once, after
        :meth:`load_state_dict`), then forget them all if their trailing
        shape, device or dtype differ from ``like``'s."""
        if self._flat is None:
            return
        same = self._trails[0] == tuple(like.shape[1:]) and \
            self._flat[0].dtype == like.dtype
        relocate, self._relocate = self._relocate and same, False
        if relocate:
            self.to(like.device)
        if not same or self._flat[0].device != like.device:
            self._forget()

    def read(self, like: Tensor) -> Optional[Entry]:
        """The stored values and targets, oldest first, padding included.

        Args:
            like (Tensor): The current batch's values; a memory of another
                trailing shape, device or dtype is reset first.

        Returns:
            tuple[Tensor, Tensor] | None: ``(values, targets)`` of ``size *
            capacity`` rows (views the next :meth:`append` overwrites); None
            before the first append without a reservation.
        """
        self._match(like)
        if self._flat is None:
            return None
        return tuple(t.flatten(0, 1) for t in self._buffers())

    def state_dict(self) -> Dict[str, object]:
        """Plain state: ``size`` and the lists ``values`` and ``targets``
        of the stored batches, oldest first (each padded to the capacity;
        a host read off the CPU)."""
        entries = list(self)
        return dict(size=self.size, values=[v for v, _ in entries],
                    targets=[t for _, t in entries])

    def load_state_dict(self, state: Dict[str, object]) -> None:
        """Restore :meth:`state_dict`; keeps the newest ``size`` entries.

        Entries may have any number of rows. Loaded tensors on another device
        move to the next batch's device; reserved buffers that fit take them in
        place.

        Raises:
            ValueError: When the state is not a memory state, naming the field.
        """
        if not isinstance(state, dict) or not {'values', 'targets'} <= set(
                state) or len(state['values']) != len(state['targets']):
            raise ValueError('ScoreMemory.load_state_dict needs a dict with '
                             'lists "values" and "targets" of equal length, '
                             f'got {type(state).__name__}')
        entries = list(zip(state['values'], state['targets']))
        for field, index in (('values', 0), ('targets', 1)):
            if not all(isinstance(e[index], Tensor) for e in entries):
                raise ValueError(f'ScoreMemory state field "{field}" must '
                                 'hold tensors')
        self.reset()
        entries = entries[max(len(entries) - self.size, 0):] \
            if self.size else []
        if not entries:
            return
        rows = max(v.shape[0] for v, _ in entries)
        trails = tuple(tuple(int(d) for d in t.shape[1:])
                       for t in entries[0])
        dtypes = tuple(t.dtype for t in entries[0])
        fits = self._flat is not None and (self._trails, tuple(
            t.dtype for t in self._flat)) == (trails, dtypes)
        if fits:
            device = self._flat[0].device
            if rows > self._cap:
                self._allocate(rows, trails, dtypes, device)
        else:
            self._forget()
            device = entries[0][0].device
            self._allocate(rows, trails, dtypes, device)
        for values, targets in entries:
            self.append(values.to(device), targets.to(device))
        self._relocate = not fits


class ScoreMemoryMixin:
    """Memory API of a loss module with ``_memory``; a checkpoint hook finds it
    by the names ``memory_state_dict`` / ``load_memory_state_dict``."""

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

    def _reserve_memory(self, shape, targets_per_column: bool) -> None:
        """Reserve the memory for ``shape`` = (rows, columns)
        (``memory_shape``; None: nothing): float values, bool targets of that
        shape (``targets_per_column``) or long labels (rows,)."""
        if shape is None:
            return
        if not isinstance(shape, (tuple, list)) or len(shape) != 2:
            raise ValueError(f'{self._memory.owner}: memory_shape must be '
                             f'None or (rows, columns), got {shape!r}')
        rows, columns = (check_int(self._memory.owner, 'memory_shape', n, 1)
                         for n in shape)
        targets = ((columns, ), torch.bool) if targets_per_column else (
            (), torch.long)
        self._memory.reserve(rows, ((columns, ), targets[0]),
                             (torch.get_default_dtype(), targets[1]))

    def _apply(self, fn, *args, **kwargs):
        """``nn.Module._apply``, taking the memory to the module's new device
        (its dtype stays; a memory on ``meta`` stays until a batch replaces
        it)."""
        device = self._memory.device
        if device is not None and device.type != 'meta':
            self._memory.follow(fn(torch.empty(0, device=device)).device)
        return super()._apply(fn, *args, **kwargs)
