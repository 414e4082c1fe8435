"""The in-batch retrieval problem shared by every metric-learning loss: each
element of a batch of L2-normalised embeddings (B, D) queries the rest of the
batch (its own column excluded by index) plus any memory; same class is
relevant. :class:`EmbeddingLoss` is the base of those losses."""
from typing import NamedTuple, Optional

import torch
import torch.nn as nn
from torch import Tensor

from ..ops.checks import all_finite, check_data, check_positive
from ..ops.precision import autocast_off
from ..ops.ranking import rank_dtype

__all__ = [
    'unit_length', 'embedding_conditions', 'check_embeddings_labels',
    'RetrievalPairs', 'retrieval_pairs', 'EmbeddingLoss'
]


def unit_length(embeddings: Tensor, tol: float = 0.02) -> Tensor:
    """0-d bool: every row of ``embeddings`` (B, D) has L2 norm 1 within
    ``tol``, whatever the dtype: a row normalised in bf16 (unit roundoff
    2**-8) is within about 0.008, also once cast to fp32; a row that was
    never normalised is rarely that close. The norm is taken in fp32 (fp64
    stays fp64); NaN fails."""
    norms = torch.linalg.vector_norm(
        embeddings.detach().to(rank_dtype(embeddings.dtype)), dim=1)
    return ((norms - 1).abs() <= tol).all()


def check_embeddings_labels(embeddings: Tensor,
                            labels: Tensor,
                            name: str = 'embeddings',
                            check_values: bool = True,
                            owner: str = 'retrieval_pairs') -> None:
    """Validates the ``(embeddings, labels)`` contract of retrieval losses.

    Args:
        embeddings (Tensor): Finite floats (B, D), rows of unit L2 norm
            (:func:`unit_length`: inner products are read as cosines).
        labels (Tensor): Integers (B,).
        name (str): Name used in the error messages. Defaults to
            ``'embeddings'``.
        check_values (bool): Also check the values (finite, unit length) by
            :func:`~mmdet_rankloss.ops.checks.check_data`; False leaves that to
            the caller. Defaults to True.
        owner (str): The function named in the value checks' messages. Defaults
            to ``'retrieval_pairs'``.

    Raises:
        ValueError: Naming the argument, its shape or dtype.
    """
    def described(x):
        return tuple(x.shape) if isinstance(x, Tensor) else type(x)

    if not isinstance(embeddings, Tensor) or embeddings.dim() != 2:
        raise ValueError(f'{name} must be a tensor of shape (B, D), got '
                         f'{described(embeddings)}')
    if not embeddings.is_floating_point():
        raise ValueError(
            f'{name} must be floating point, got {embeddings.dtype}')
    if embeddings.shape[1] == 0:
        raise ValueError(f'{name} has shape {tuple(embeddings.shape)}: the '
                         'embedding dimension D must be > 0')
    n = embeddings.shape[0]
    if not isinstance(labels, Tensor) or labels.shape != (n, ):
        raise ValueError(
            f'labels must be a tensor of shape ({n},) to match {name} of '
            f'shape {tuple(embeddings.shape)}, got {described(labels)}')
    if labels.is_floating_point() or labels.is_complex() or \
            labels.dtype == torch.bool:
        raise ValueError(
            f'labels must be integer class ids, got dtype {labels.dtype}')
    if labels.device != embeddings.device:
        raise ValueError(f'labels are on {labels.device} but {name} on '
                         f'{embeddings.device}')
    if check_values and n:
        check_data(owner, embedding_conditions(embeddings, name))


def embedding_conditions(embeddings: Tensor, name: str = 'embeddings'):
    """The value checks of ``embeddings`` for
    :func:`~mmdet_rankloss.ops.checks.check_data`: finite, unit length."""
    return [(all_finite(embeddings), f'{name} contain NaN or inf'),
            (unit_length(embeddings),
             f'{name} must have unit L2 norm per row (the losses read inner '
             'products as cosines): normalise them first, e.g. '
             'F.normalize(embeddings, dim=1)')]


class RetrievalPairs(NamedTuple):
    """One in-batch retrieval problem: a row per query, a column per item.

    Columns ``0..B-1`` are the batch itself, columns ``B..`` the reference
    (memory) items, in the order given.
    """
    scores: Tensor  # (B, B + M) cosine similarities, fp32 (fp64 stays fp64),
    # also under autocast
    positives: Tensor  # (B, B + M) bool, same class and not excluded
    valid: Tensor  # (B, B + M) bool, False only on each query's own column


def retrieval_pairs(embeddings: Tensor,
                    labels: Tensor,
                    ref_embeddings: Optional[Tensor] = None,
                    ref_labels: Optional[Tensor] = None,
                    check_values: bool = True,
                    owner: str = 'retrieval_pairs') -> RetrievalPairs:
    """Scores and ground truth of every (query, gallery item) pair.

    The score is the inner product (cosine for L2-normalised embeddings) in
    fp32 (fp64 stays fp64) with autocast off: in fp16 a vector's similarity
    with itself rounds to 1 (an infinite derivative of the distance) and
    neighbours tie. Gradients reach both sides of a pair from the batch;
    reference items are used as given (pass them detached).

    Args:
        embeddings (Tensor): Query embeddings (B, D), also the first B gallery
            columns.
        labels (Tensor): Integer class labels (B,).
        ref_embeddings (Tensor, optional): Extra gallery items (M, D), e.g. a
            memory of earlier batches. Defaults to None (M = 0).
        ref_labels (Tensor, optional): Their labels (M,). Required with
            ``ref_embeddings``.
        check_values (bool): See :func:`check_embeddings_labels`. Defaults to
            True.
        owner (str): The loss named in the value checks' messages.

    Returns:
        RetrievalPairs: ``scores``, ``positives`` and ``valid`` of shape
        (B, B + M); ``valid`` excludes each query's own column by index.
    """
    check_embeddings_labels(embeddings, labels, check_values=check_values,
                            owner=owner)
    work = rank_dtype(embeddings.dtype)
    gallery, gallery_labels = embeddings.to(work), labels
    if (ref_embeddings is None) != (ref_labels is None):
        raise ValueError('ref_embeddings and ref_labels must be given '
                         'together')
    if ref_embeddings is not None:
        check_embeddings_labels(ref_embeddings, ref_labels, 'ref_embeddings',
                                check_values, owner)
        if ref_embeddings.shape[1] != embeddings.shape[1]:
            raise ValueError(
                f'ref_embeddings have dimension {ref_embeddings.shape[1]} '
                f'but embeddings {embeddings.shape[1]}')
        gallery = torch.cat([gallery, ref_embeddings.to(work)])
        gallery_labels = torch.cat([labels, ref_labels.to(labels.dtype)])
    with autocast_off(embeddings.device):
        scores = embeddings.to(work) @ gallery.t()
    n = embeddings.shape[0]
    # each query's own column out, written without an in-place write
    # through a view (which AOT autograd, hence inductor, refuses)
    columns = torch.arange(scores.shape[1], device=scores.device)
    valid = columns[:n, None] != columns
    positives = (labels[:, None] == gallery_labels[None, :]) & valid
    return RetrievalPairs(scores, positives, valid)


class EmbeddingLoss(nn.Module):
    """Base of the metric-learning losses: ``loss(embeddings, labels)``.

    Called with L2-normalised embeddings (B, D) and integer labels (B,) (rows
    not of unit length raise a ``ValueError``, a device assertion off the CPU).
    Each element queries the rest of the batch (:func:`retrieval_pairs`) plus a
    memory where the loss keeps one. The per-query loss is averaged over the
    queries that have what the loss needs (a positive, or a positive and a
    negative), the others skipped; with none the result is a zero in the graph.
    Times ``loss_weight``. Subclasses implement :meth:`loss` (the unweighted
    scalar) and list their settings in ``_repr_keys``.

    Args:
        loss_weight (float): Multiplier of the loss, >= 0. Defaults to 1.0.
        **kwargs: Passed on to the next base class (e.g. a sorter holder).
    """

    _repr_keys = ()

    def __init__(self, loss_weight: float = 1.0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.loss_weight = check_positive(
            type(self).__name__, 'loss_weight', loss_weight, allow_zero=True)

    def extra_repr(self) -> str:
        return ', '.join(f'{key}={getattr(self, key)!r}'
                         for key in self._repr_keys + ('loss_weight', ))

    def loss(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        """The unweighted scalar loss of a batch."""
        raise NotImplementedError(
            f'{type(self).__name__} subclasses EmbeddingLoss but does not '
            'implement loss(embeddings, labels), which returns the '
            'unweighted scalar loss of a batch')

    def forward(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        """``loss_weight * loss(embeddings, labels)``, a scalar (fp32)."""
        return self.loss_weight * self.loss(embeddings, labels)
