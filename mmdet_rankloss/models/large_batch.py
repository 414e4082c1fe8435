"""Large-batch training for non-decomposable losses (FastAP section 4.1).

A listwise loss needs the whole batch only through its embeddings ``E``: embed
chunk by chunk without a graph, compute the loss and ``G = dL/dE`` on the full
``E``, then embed each chunk again with a graph and back-propagate
``sum(E_chunk * G_chunk)``. The parameter gradient is the one-pass one if the
network treats samples independently (frozen BatchNorm, ``norm_eval=True``;
each chunk's RNG state is replayed for dropout). Under AMP ``E`` and ``G`` are
fp32 (fp16 flushes the small entries of a large batch), and ``G`` is the scaled
loss's gradient."""
import contextlib
import warnings
from typing import Callable, Dict, Optional, Union

import torch
from mmengine.optim import OptimWrapper
from torch import Tensor
from torch.nn.modules.batchnorm import _BatchNorm

from mmdet.registry import MODELS
from ..ops.checks import check_int
from ..ops.ranking import rank_dtype
from .retrieval import RetrievalModel

__all__ = ['chunked_embedding_backward', 'LargeBatchRetrievalModel']


def _rng_state(device: torch.device):
    cuda = torch.cuda.get_rng_state(device) if device.type == 'cuda' \
        else None
    return torch.get_rng_state(), cuda


def _set_rng_state(state, device: torch.device) -> None:
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state(state[1], device)


def chunked_embedding_backward(
        embed: Callable[[Tensor], Tensor],
        inputs: Tensor,
        loss_fn: Callable[[Tensor], Tensor],
        chunk_size: int,
        backward: Optional[Callable[[Tensor], None]] = None,
        context: Optional[Callable[[], object]] = None,
        scale_loss: Optional[Callable[[Tensor], Tensor]] = None) -> Tensor:
    """Back-propagates ``loss_fn(embed(inputs))`` chunk by chunk (module doc).

    Args:
        embed (callable): Maps a chunk of inputs (n, ...) to embeddings (n, D);
            must treat samples independently (frozen BatchNorm).
        inputs (Tensor): The whole batch (B, ...).
        loss_fn (callable): Maps the embedding matrix (B, D) to a scalar loss.
        chunk_size (int): Samples per forward pass, >= 1.
        backward (callable, optional): Runs each chunk's backward of
            ``sum(E_chunk * G_chunk)`` (fp32). Defaults to ``Tensor.backward``.
        context (callable, optional): A context manager factory entered around
            every forward pass (e.g. autocast). Defaults to None.
        scale_loss (callable, optional): Maps the loss to the one
            differentiated, e.g. ``GradScaler.scale`` (then ``G`` and the
            parameter gradients are scaled). Defaults to None.

    Returns:
        Tensor: The detached loss value; parameter gradients are accumulated
        into ``.grad`` as one backward pass of the loss would.
    """
    check_int('chunked_embedding_backward', 'chunk_size', chunk_size, 1)
    if not isinstance(inputs, Tensor) or inputs.dim() == 0 or \
            inputs.shape[0] == 0:
        raise ValueError('inputs must be a non-empty batch tensor (B, ...), '
                         f'got {getattr(inputs, "shape", type(inputs))}')
    context = context or contextlib.nullcontext
    backward = backward or Tensor.backward
    starts = range(0, inputs.shape[0], chunk_size)
    states, chunks = [], []
    with torch.no_grad():
        for start in starts:
            states.append(_rng_state(inputs.device))
            with context():
                chunks.append(embed(inputs[start:start + chunk_size]))
    after = _rng_state(inputs.device)
    # E and G in at least fp32: fp16 chunks (autocast) would give an fp16 G
    embeddings = torch.cat(chunks).detach()
    embeddings = embeddings.to(rank_dtype(
        embeddings.dtype)).requires_grad_(True)
    with context():
        loss = loss_fn(embeddings)
    if not isinstance(loss, Tensor) or loss.dim() != 0:
        raise ValueError('loss_fn must return a scalar tensor, got '
                         f'{getattr(loss, "shape", type(loss))}')
    if not loss.requires_grad:  # nothing to learn from this batch
        return loss.detach()
    scaled = loss if scale_loss is None else scale_loss(loss)
    (grad, ) = torch.autograd.grad(scaled, embeddings)
    for start, state in zip(starts, states):
        _set_rng_state(state, inputs.device)
        with context():
            chunk = embed(inputs[start:start + chunk_size])
            # in G's dtype: casting G to an fp16 chunk's would flush it
            surrogate = (chunk.to(grad.dtype) *
                         grad[start:start + chunk_size]).sum()
        backward(surrogate)
    _set_rng_state(after, inputs.device)
    return loss.detach()


@MODELS.register_module()
class LargeBatchRetrievalModel(RetrievalModel):
    """:class:`RetrievalModel` trained with FastAP's large-batch heuristic.

    Same arguments and behaviour as ``RetrievalModel``, plus ``chunk_size``:
    a training batch is embedded ``chunk_size`` images at a time (section
    4.1), so the batch size is limited by the loss layer, not by the
    backbone's activations. Needs frozen BatchNorm statistics
    (``backbone.norm_eval=True``); a warning is given otherwise. It works
    with MMEngine's ``OptimWrapper`` and ``AmpOptimWrapper`` (gradient
    accumulation included) in single-process training; under
    ``MMDistributedDataParallel`` the wrapper's own ``train_step`` is used
    and the batch is embedded in one pass.

    Args:
        chunk_size (int): Images per forward pass. Defaults to 64.
        **kwargs: The arguments of :class:`RetrievalModel`.
    """

    def __init__(self, chunk_size: int = 64, **kwargs) -> None:
        super().__init__(**kwargs)
        self.chunk_size = check_int(type(self).__name__, 'chunk_size',
                                    chunk_size, 1)
        self._warned_bn = False

    def _metric_losses(self, embeddings: Tensor,
                       labels: Tensor) -> Dict[str, Tensor]:
        out = self.metric_loss(embeddings, labels)
        return dict(loss_metric=out) if isinstance(out, Tensor) else out

    def _check_frozen_bn(self) -> None:
        if self._warned_bn:
            return
        training_bn = [
            name for name, m in self.named_modules()
            if isinstance(m, _BatchNorm) and m.training
        ]
        if training_bn:
            warnings.warn(
                'LargeBatchRetrievalModel: BatchNorm layers in training mode '
                f'({training_bn[0]}, ...) normalise each chunk separately; '
                'the chunked gradient then differs from the one-pass '
                'gradient. Use norm_eval=True.')
            self._warned_bn = True

    def train_step(self, data: Union[dict, tuple, list],
                   optim_wrapper: OptimWrapper) -> Dict[str, Tensor]:
        """One optimisation step on a batch embedded in chunks.

        Mirrors ``BaseModel.train_step`` (preprocess, loss, ``parse_losses``,
        scaled backward, step when due), with the backward pass of section
        4.1.

        Args:
            data (dict | tuple | list): A batch from the dataloader.
            optim_wrapper (OptimWrapper): The optimizer wrapper.

        Returns:
            dict[str, Tensor]: Logged values, as ``parse_losses`` gives.
        """
        self._check_frozen_bn()
        with optim_wrapper.optim_context(self):
            data = self.data_preprocessor(data, True)
        inputs = data['inputs']
        labels = self._labels(data.get('data_samples'), inputs.shape[0],
                              inputs.device)
        log_vars = {}

        def loss_fn(embeddings: Tensor) -> Tensor:
            parsed, logs = self.parse_losses(
                self._metric_losses(embeddings, labels))
            log_vars.update(logs)
            return optim_wrapper.scale_loss(parsed)

        # AmpOptimWrapper's GradScaler: G is taken of the scaled loss, so
        # the parameter gradients are scaled as its step() expects
        scaler = getattr(optim_wrapper, 'loss_scaler', None)
        chunked_embedding_backward(
            self.embed, inputs, loss_fn, self.chunk_size,
            context=lambda: optim_wrapper.optim_context(self),
            scale_loss=None if scaler is None else scaler.scale)
        # one backward of the whole batch as far as the wrapper is concerned
        # (OptimWrapper.backward's contract: count every backward pass)
        optim_wrapper._inner_count += 1
        if optim_wrapper.should_update():
            optim_wrapper.step()
            optim_wrapper.zero_grad()
        return log_vars
