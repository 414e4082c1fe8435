"""SoDeep differentiable sorters (Engilberge et al., CVPR 2019, section 3.1).

A sorter maps a score vector of a fixed length ``d`` (``seq_len``) to its
normalised descending ranks ``rk(y) / d`` in (0, 1] (rank 1, ``1 / d``, is the
highest score): :class:`HandcraftedSorter` (pairwise sigmoids, Eq. 11-12,
``lambda = 10``; no training), :class:`LSTMSorter` (bidirectional LSTM +
linear, Fig. 3a) and :class:`CNNSorter` (8 Conv1d + BatchNorm + ReLU blocks
down to one position of ``d`` channels + linear, Fig. 3b). The learned ones are
pre-trained on :func:`synthetic_scores` with Eq. 1's L1 objective
(``tools/misc/pretrain_sorter.py``); checkpoints load with
``torch.load(weights_only=True)``. Why ``networks/``: docs/architecture.md."""
import warnings
from typing import Optional, Sequence, Tuple, Union

import torch
import torch.nn as nn
from torch import Tensor

from ..ops.checks import check_int, check_positive
from ..ops.ranking import exact_rank
from ..ops.soft_rank import soft_rank

__all__ = [
    'HandcraftedSorter', 'LSTMSorter', 'CNNSorter', 'SORTERS', 'build_sorter',
    'save_sorter', 'load_sorter', 'synthetic_scores', 'normalized_ranks',
    'SYNTHETIC_KINDS'
]

SYNTHETIC_KINDS = ('uniform', 'normal', 'linspace', 'mixture')


def normalized_ranks(y: Tensor) -> Tensor:
    """Targets of the sorters: exact descending ranks divided by ``d``."""
    return exact_rank(y, normalize=True)


class _Sorter(nn.Module):
    """Input checks shared by the sorters. Each sorter defines
    ``settings()``: its plain constructor arguments, saved with the weights.
    """

    def __init__(self, seq_len: int) -> None:
        super().__init__()
        self.seq_len = check_int(type(self).__name__, 'seq_len', seq_len, 1)

    def _check(self, y: Tensor) -> None:
        if not isinstance(y, Tensor) or y.dim() != 2 or \
                not y.is_floating_point():
            raise ValueError(
                f'{type(self).__name__} takes floating point scores of shape '
                f'(N, {self.seq_len}), got '
                f'{tuple(y.shape) if isinstance(y, Tensor) else type(y)}')
        if y.shape[1] != self.seq_len:
            raise ValueError(
                f'{type(self).__name__} was built for sequences of length '
                f'seq_len={self.seq_len}, got rows of length {y.shape[1]} '
                f'(input shape {tuple(y.shape)})')

    def extra_repr(self) -> str:
        return ', '.join(f'{k}={v}' for k, v in self.settings().items())


class HandcraftedSorter(_Sorter):
    """Pairwise sigmoid sorter (SoDeep Eq. 11-12), no parameters.

    ``f_h(y, i) = 1 + sum_{j != i} sigmoid(lambda (y_j - y_i))``, divided by
    ``d``; computed by :func:`~mmdet_rankloss.ops.soft_rank.soft_rank`
    without an (N, d, d) tensor.

    Args:
        seq_len (int): Sequence length ``d``.
        lambda_val (float): Sharpness of the comparisons: higher is closer
            to the exact ranks but gives vanishing gradients. Defaults to
            10.0 (the paper's value).
    """

    def __init__(self, seq_len: int = 100, lambda_val: float = 10.0) -> None:
        super().__init__(seq_len)
        self.lambda_val = check_positive(type(self).__name__, 'lambda_val',
                                         lambda_val)

    def settings(self):
        return dict(seq_len=self.seq_len, lambda_val=self.lambda_val)

    def forward(self, y: Tensor) -> Tensor:
        """Normalised soft ranks (N, d) of scores (N, d)."""
        self._check(y)
        return soft_rank(y, 1.0 / self.lambda_val) / self.seq_len


class LSTMSorter(_Sorter):
    """Bidirectional LSTM sorter (SoDeep Fig. 3a).

    Every output sees the whole sequence through the two directions, which
    ranking needs; a linear layer projects each position's state to its
    rank.

    Args:
        seq_len (int): Sequence length ``d``. Defaults to 100.
        hidden_size (int): LSTM units per direction. Defaults to 64.
        num_layers (int): Stacked bidirectional layers. Defaults to 2.
    """

    def __init__(self,
                 seq_len: int = 100,
                 hidden_size: int = 64,
                 num_layers: int = 2) -> None:
        super().__init__(seq_len)
        owner = type(self).__name__
        hidden_size = check_int(owner, 'hidden_size', hidden_size, 1)
        num_layers = check_int(owner, 'num_layers', num_layers, 1)
        self.lstm = nn.LSTM(
            1, hidden_size, num_layers, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(2 * hidden_size, 1)

    def settings(self):
        return dict(
            seq_len=self.seq_len,
            hidden_size=self.lstm.hidden_size,
            num_layers=self.lstm.num_layers)

    def forward(self, y: Tensor) -> Tensor:
        """Predicted normalised ranks (N, d) of scores (N, d)."""
        self._check(y)
        # cuDNN refuses the RNN backward in eval mode, which a frozen sorter
        # needs for the gradient w.r.t. its input; train and eval are the
        # same computation here (no dropout), so use the native kernel.
        # On CPU the oneDNN LSTM builds a new kernel for every new batch
        # size (the chunk count of SorterRanker varies per step) and was
        # slower than the native kernel on the 2-core VM.
        with warnings.catch_warnings():
            # mkldnn.flags() re-sets its TF32 flag and warns that TF32 is
            # for Intel GPUs, on every CPU-only build: not about this code
            warnings.filterwarnings(
                'ignore', message='TF32 acceleration on top of oneDNN')
            with torch.backends.cudnn.flags(enabled=self.training), \
                    torch.backends.mkldnn.flags(enabled=False):
                states, _ = self.lstm(
                    y.to(self.proj.weight.dtype)[..., None])
        return self.proj(states)[..., 0]


def _cnn_kernel_sizes(seq_len: int, num_blocks: int) -> Tuple[int, ...]:
    """Filter sizes of valid convolutions taking length d down to 1."""
    base, extra = divmod(seq_len - 1, num_blocks)
    return tuple(base + 1 + (i < extra) for i in range(num_blocks))


class CNNSorter(_Sorter):
    """Convolutional sorter (SoDeep Fig. 3b): 8 x (Conv1d, BN, ReLU) + linear.

    The filter sizes are chosen so that the valid convolutions shrink the
    sequence from ``d`` positions to one, whose last block has ``d``
    channels: every output channel sees the whole input, and the final
    linear layer maps the ``d`` channels to the ``d`` ranks. The local
    filters mimic the compare-and-swap steps of sorting networks.

    Args:
        seq_len (int): Sequence length ``d``. Defaults to 100.
        channels (Sequence[int]): Output channels of the first 7 blocks; the
            8th has ``seq_len``. Defaults to (16, 32, 32, 64, 64, 128, 128).
    """

    def __init__(self,
                 seq_len: int = 100,
                 channels: Sequence[int] = (16, 32, 32, 64, 64, 128, 128)
                 ) -> None:
        super().__init__(seq_len)
        channels = [int(c) for c in channels]
        if len(channels) != 7 or min(channels) < 1:
            raise ValueError(
                'channels must give 7 positive block widths (the 8th block '
                f'has seq_len channels), got {channels}')
        widths = [1] + channels + [seq_len]
        blocks = []
        for c_in, c_out, k in zip(widths, widths[1:],
                                  _cnn_kernel_sizes(seq_len, 8)):
            blocks += [
                nn.Conv1d(c_in, c_out, k, bias=False),
                nn.BatchNorm1d(c_out),
                nn.ReLU(inplace=True)
            ]
        self.blocks = nn.Sequential(*blocks)
        self.proj = nn.Linear(seq_len, seq_len)

    def settings(self):
        return dict(
            seq_len=self.seq_len,
            channels=[self.blocks[3 * i].out_channels for i in range(7)])

    def forward(self, y: Tensor) -> Tensor:
        """Predicted normalised ranks (N, d) of scores (N, d)."""
        self._check(y)
        work = y.to(self.proj.weight.dtype)
        return self.proj(self.blocks(work[:, None, :])[..., 0])


SORTERS = {
    cls.__name__: cls
    for cls in (HandcraftedSorter, LSTMSorter, CNNSorter)
}


def build_sorter(cfg: Union[dict, nn.Module]) -> nn.Module:
    """A sorter from ``dict(type='LSTMSorter', seq_len=100, ...)``.

    Args:
        cfg (dict | nn.Module): Config with a ``type`` among
            :data:`SORTERS`, or an already built module (returned as is).

    Returns:
        nn.Module: The sorter.
    """
    if isinstance(cfg, nn.Module):
        return cfg
    if not isinstance(cfg, dict) or cfg.get('type') not in SORTERS:
        raise ValueError(f'sorter config must be a dict with type in '
                         f'{sorted(SORTERS)}, got {cfg!r}')
    args = dict(cfg)
    return SORTERS[args.pop('type')](**args)


def save_sorter(sorter: nn.Module, path: str, **meta) -> None:
    """Saves weights and plain settings, loadable with ``weights_only=True``.

    Args:
        sorter (nn.Module): One of :data:`SORTERS`.
        path (str): Output file.
        **meta: Extra plain values to record (numbers, strings, lists),
            e.g. the validation L1 and the number of training steps.
    """
    state = {k: v.detach().cpu() for k, v in sorter.state_dict().items()}
    torch.save(
        dict(
            type=type(sorter).__name__,
            settings=sorter.settings(),
            state_dict=state,
            meta=meta), path)


def load_sorter(path: str, map_location: Union[str, torch.device] = 'cpu'
                ) -> nn.Module:
    """Rebuilds a sorter saved by :func:`save_sorter` (``weights_only=True``).

    Args:
        path (str): Checkpoint file.
        map_location (str | torch.device): Where to load the weights.
            Defaults to ``'cpu'``.

    Returns:
        nn.Module: The sorter, in eval mode.
    """
    ckpt = torch.load(path, map_location=map_location, weights_only=True)
    if not isinstance(ckpt, dict) or not {'type', 'settings', 'state_dict'
                                          } <= set(ckpt):
        raise ValueError(f'{path} is not a sorter checkpoint written by '
                         'save_sorter (needs type, settings and state_dict)')
    sorter = build_sorter(dict(type=ckpt['type'], **ckpt['settings']))
    sorter.load_state_dict(ckpt['state_dict'])
    return sorter.eval()


def synthetic_scores(num: int,
                     seq_len: int,
                     kind: str = 'all',
                     generator: Optional[torch.Generator] = None,
                     device: Union[str, torch.device] = 'cpu') -> Tensor:
    """Random score vectors of SoDeep section 3.1.2.

    Kinds: ``'uniform'`` over [-1, 1]; ``'normal'`` (mean 0, std 1);
    ``'linspace'``: evenly spaced numbers over a random sub-range of
    [-1, 1], in random order; ``'mixture'``: every element drawn from one of
    the three, with mixture weights drawn per vector (uniform on the
    simplex); ``'all'``: each vector of a random kind among the four.

    Args:
        num (int): Number of vectors N.
        seq_len (int): Their length d.
        kind (str): One of :data:`SYNTHETIC_KINDS` or ``'all'``. Defaults to
            ``'all'``.
        generator (torch.Generator, optional): For reproducible draws (on
            ``device``). Defaults to None.
        device (str | torch.device): Defaults to ``'cpu'``.

    Returns:
        Tensor: Scores (N, d), fp32. Their targets are
        :func:`normalized_ranks`.
    """
    if kind != 'all' and kind not in SYNTHETIC_KINDS:
        raise ValueError(f'kind must be "all" or one of {SYNTHETIC_KINDS}, '
                         f'got {kind!r}')
    g = dict(generator=generator, device=device)
    uniform = torch.rand(num, seq_len, **g) * 2 - 1
    normal = torch.randn(num, seq_len, **g)
    ends = torch.rand(num, 2, **g) * 2 - 1
    low, high = ends.min(1).values, ends.max(1).values
    steps = torch.linspace(0, 1, seq_len, device=device)
    linspace = low[:, None] + (high - low)[:, None] * steps
    order = torch.rand(num, seq_len, **g).argsort(1)
    linspace = linspace.gather(1, order)
    sources = torch.stack([uniform, normal, linspace])  # (3, N, d)
    weights = -torch.rand(num, 3, **g).log()  # Dirichlet(1, 1, 1)
    pick = torch.multinomial(weights / weights.sum(1, keepdim=True), seq_len,
                             replacement=True, generator=generator)
    mixture = sources.gather(0, pick[None]).squeeze(0)
    sources = torch.cat([sources, mixture[None]])  # (4, N, d)
    if kind == 'all':
        which = torch.randint(0, 4, (num, ), **g)
    else:
        which = torch.full((num, ), SYNTHETIC_KINDS.index(kind),
                           device=device)
    return sources[which, torch.arange(num, device=device)]
