"""Average Precision loss by blackbox ranking (RaMBO, Rolinek et al. 2020).

Paper: "Optimizing Rank-based Metrics with Blackbox Differentiation",
CVPR 2020, https://arxiv.org/abs/1912.03500, sections 4.3, 4.4 and 4.6.

AP is computed exactly from ranks (Eq. 21-22) and differentiated with
Algorithm 1 through :func:`~mmdet_rankloss.ops.ranking.blackbox_rank_loss`,
so the loss is immune to upstream scaling (``loss_weight``, AMP). The
detection module :class:`RaMBOAPLoss` plugs into a stock MMDetection bbox
head as ``loss_cls`` and combines the per-class loss ``L_mAP`` (with a
score memory) and the across-class loss ``L_APC`` (Eq. 23) 2:1.
"""
import math
from typing import Dict, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

from mmdet.models.losses import accuracy
from mmdet.registry import MODELS

from ..ops.distributed import gather_for_ranking
from ..ops.ranking import rank_dtype
from .ap_rankers import BlackboxRanker
from .memory import ScoreMemory, ScoreMemoryMixin

__all__ = ['average_precision_loss', 'RaMBOAPLoss']

_REDUCTIONS = ('mean', 'sum')
_SCORE_SPACES = ('sigmoid', 'softmax', 'logits')


def _is_number(value) -> bool:
    """A finite int or float (not a bool)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def _check_reduction(reduction: Optional[str], name: str) -> None:
    if reduction == 'none':
        raise ValueError(
            f"{name}='none' is not supported: AP is a function of the "
            'whole ranking, not a sum of per-element terms, so there is no '
            'per-element loss to return (this is what OHEMSampler asks for; '
            'use a random sampler with rank losses)')
    if reduction not in _REDUCTIONS:
        raise ValueError(
            f'{name} must be one of {_REDUCTIONS}, got {reduction!r}')


def _check_ap_inputs(scores: Tensor, labels: Tensor, margin: float) -> None:
    if not isinstance(scores, Tensor) or not scores.is_floating_point():
        raise ValueError('scores must be a floating point tensor, got '
                         f'{getattr(scores, "dtype", type(scores))}')
    if scores.dim() == 0 or scores.shape[-1] == 0:
        raise ValueError('scores must have shape (..., n) with n > 0, got '
                         f'{tuple(scores.shape)}')
    if not isinstance(labels, Tensor) or labels.shape != scores.shape:
        raise ValueError(
            f'labels must be a tensor of the scores shape '
            f'{tuple(scores.shape)}, got '
            f'{tuple(labels.shape) if isinstance(labels, Tensor) else labels}')
    if labels.dtype != torch.bool and bool(((labels != 0) &
                                            (labels != 1)).any()):
        raise ValueError('labels must be binary (0/1 or bool)')
    if not bool(torch.isfinite(scores).all()):
        raise ValueError('scores contain NaN or inf')
    if not _is_number(margin) or margin < 0:
        raise ValueError(
            f'margin must be a finite number >= 0, got {margin!r}')


def average_precision_loss(scores: Tensor,
                           labels: Tensor,
                           lambda_val: float = 0.5,
                           margin: float = 0.0,
                           normalize_ranks: bool = True,
                           reduction: str = 'mean',
                           positive_rank_grad: bool = False) -> Tensor:
    """``1 - AP`` of each row of scores, differentiated by blackbox ranking.

    AP follows Eq. 21-22: for every positive, precision = its rank among the
    positives / its rank among all elements, both computed on the scores
    shifted by the margin of Eq. 14 (positives ``- margin / 2``, negatives
    ``+ margin / 2``). Ties are ranked by index (see
    :func:`~mmdet_rankloss.ops.ranking.exact_rank`). Rows without a
    positive have no AP and are left out (never NaN); when no row has one,
    the result is ``scores.sum() * 0``, a zero that keeps the graph.

    Args:
        scores (Tensor): Scores of shape (..., n), one ranking per row.
            Any floating dtype; fp16/bf16 are shifted and ranked in fp32.
        labels (Tensor): Binary relevance of the scores' shape (bool or 0/1).
        lambda_val (float): Algorithm 1's interpolation strength, > 0.
            Defaults to 0.5 (the paper's detection setting).
        margin (float): Margin alpha of Eq. 14, >= 0. Defaults to 0.0.
        normalize_ranks (bool): Rank as fractions ``rank / n`` instead of
            integers. The loss value is the same (precision is a ratio of
            ranks), but Algorithm 1 then perturbs the scores n times more,
            i.e. it acts as ``lambda * n`` on integer ranks: without it a
            ranking of thousands of elements gets almost no gradient at
            lambda = 0.5 (see ``docs/score_space.md``). Defaults to True.
        reduction (str): ``'mean'`` or ``'sum'`` of ``1 - AP`` over the rows
            that have a positive. Defaults to ``'mean'``.
        positive_rank_grad (bool): Also differentiate the rank among the
            positives (the numerator of Eq. 21) by Algorithm 1, i.e. treat
            Eq. 21 as two rankers. The value is the same. Off by default:
            AP does not change when two positives swap, but the two rankers
            are perturbed in opposite directions, and at realistic sizes the
            second one pushes the best-ranked positives down (measured in
            ``docs/score_space.md``). Off, the rank among positives is read
            off the one ranking and held constant. Defaults to False.

    Returns:
        Tensor: Scalar loss (fp32, fp64 for fp64 scores).

    Raises:
        ValueError: On bad shapes, non-binary labels, NaN/inf scores,
            lambda <= 0, margin < 0 or an unknown reduction.

    Example:
        >>> scores = torch.tensor([[0.9, 0.2, 0.6, 0.1]], requires_grad=True)
        >>> labels = torch.tensor([[1, 0, 0, 1]])
        >>> loss = average_precision_loss(scores, labels)
        >>> round(loss.item(), 4)  # AP = (1/1 + 2/4) / 2
        0.25
    """
    _check_ap_inputs(scores, labels, margin)
    _check_reduction(reduction, 'reduction')
    ranker = BlackboxRanker(lambda_val, normalize_ranks, positive_rank_grad)
    return ranker(scores, labels.bool(), float(margin), reduction).loss


@MODELS.register_module()
class RaMBOAPLoss(ScoreMemoryMixin, nn.Module):
    """RaMBO mAP + APC loss for the classifier of a two-stage detector.

    A drop-in ``loss_cls`` for stock bbox heads (e.g. ``Shared2FCBBoxHead``):

    ``L = loss_weight * (map_weight * L_mAP + apc_weight * L_APC)``

    * ``L_mAP``: for every foreground class that has a positive among the
      current RoIs and the memory, ``1 - AP`` of that class's scores over the
      current RoIs plus the scores of the last ``memory`` batches (section
      4.3), averaged (``reduction='mean'``) or summed over those classes.
      All classes are ranked in one batched call.
    * ``L_APC``: ``1 - AP`` of all (RoI, class) scores of the current batch
      as one sequence (Eq. 23), which supervises across classes.

    A RoI of class ``c`` is a positive for column ``c`` and a negative for
    every other class; background RoIs are negatives for every class. RoIs
    with weight 0 are left out. The gradient comes from Algorithm 1 at unit
    upstream scale, so ``loss_weight`` and AMP loss scaling scale it without
    changing its direction.

    Score memory: detached scores (in the ranked score space) and labels of
    the last ``memory`` training batches of this process, kept as a plain
    ``deque`` on the scores' device, not as registered buffers (DDP would
    overwrite them with rank 0's, and checkpoints would carry stale scores).
    Memory entries take part in the ranking but get no gradient. It is only
    appended to in training mode, kept across train/eval switches (the
    validation loop does not call the loss), and cleared automatically when
    the number of classes, the device or the dtype of the scores changes,
    or explicitly with :meth:`reset_memory`.

    Distributed training: by default each process ranks its own RoIs, as
    every published rank loss does. With ``global_ranking=True`` the RoI
    scores and labels of all processes are gathered
    (:func:`~mmdet_rankloss.ops.gather_for_ranking`), every process ranks
    the global batch, and gradients flow back to the local part: the loss
    equals the single-process loss on the concatenated batch, and after
    DDP's gradient averaging so does the parameter gradient. The memory
    then stores the gathered batches, so it is identical on every process.

    Score space (``score_space``): what is ranked.

    * ``'logits'`` (default): the first C raw logits of a stock C + 1
      channel head (so CE checkpoints load as they are); the background
      logit is not used by the loss. ``sigmoid`` of each logit at test
      time (see :meth:`get_activation`: a softmax would reorder a class's
      RoIs by their other logits).
    * ``'softmax'``: the first C columns of the softmax over C + 1 logits
      (background last); gradients reach the background logit too. Softmax
      at test time.
    * ``'sigmoid'``: C logits (the head is built with C channels through
      ``get_cls_channels``), ranked as ``sigmoid``; sigmoid at test time.

    ``'logits'`` is the default because it is the only space in which the
    paper's margin and lambda give a freshly initialised head any gradient
    worth the name, and the only one in which a linear probe gets close to
    cross-entropy (measured in ``docs/score_space.md``): in probability
    units the margin of 0.15 exceeds the spread of the scores at
    initialisation, which sinks every positive below every negative and
    leaves almost nothing within reach of Algorithm 1's perturbation.

    Ranking back-end (``ranker``): how the ranks in AP get a gradient.
    The default is Algorithm 1 (:class:`BlackboxRanker`, the paper);
    :class:`SigmoidRanker` uses sigmoid soft ranks of the positives (the
    Soft Ranking Threshold surrogate) and :class:`SorterRanker` the ranks
    predicted by a SoDeep sorter network, in random chunks of its sequence
    length. Everything else (score space, margin, memory, mAP + APC, the
    logged exact AP) is the same, so configs that differ only in ``ranker``
    compare the three surrogates (``docs/detection.md``).

    Logged diagnostics (keys without ``loss``, so mmdet only logs them):
    ``rambo_ap`` (mAP of the margin-shifted scores over batch and memory,
    the quantity being optimised), ``rambo_pos_grad_frac`` /
    ``rambo_neg_grad_frac`` (fraction of positive / negative (RoI, class)
    scores of the current batch whose gradient pushes them up / down), and
    ``rambo_grad_density`` (fraction of current scores with any gradient).
    They come from the same Algorithm-1 gradient that backward applies
    (computed in forward, since dL/drk is known there), before the chain
    rule through the score space, so they cost no extra sort. A key is left
    out when it is undefined (no positives). The gradient keys need the
    blackbox ranker; with the other back-ends only ``rambo_ap`` is logged.

    Args:
        memory (int): Number of previous batches kept (tau), >= 0.
            Defaults to 7 (paper).
        margin (float): Margin alpha of Eq. 14, in the units of the ranked
            scores. Defaults to 0.15 (paper).
        lambda_val (float): Algorithm 1's interpolation strength.
            Defaults to 0.5 (paper).
        map_weight (float): Weight of ``L_mAP``. Defaults to 2/3.
        apc_weight (float): Weight of ``L_APC``. Defaults to 1/3 (the
            paper's 2:1).
        score_space (str): ``'logits'``, ``'softmax'`` or ``'sigmoid'``.
            Defaults to ``'logits'``.
        normalize_ranks (bool): Rank as ``rank / n`` (see
            :func:`average_precision_loss`). Defaults to True.
        positive_rank_grad (bool): Also differentiate the rank among
            positives (see :func:`average_precision_loss`). Defaults to
            False.
        loss_weight (float): Multiplies both loss terms. Defaults to 1.0.
        reduction (str): ``'mean'`` or ``'sum'`` of the per-class losses in
            ``L_mAP``. Defaults to ``'mean'``.
        global_ranking (bool): Rank the RoIs of all processes together
            (see above). Defaults to False.
        ranker (dict, optional): The ranking back-end (see above), e.g.
            ``dict(type='SigmoidRanker', temperature=1.0)`` or
            ``dict(type='SorterRanker', checkpoint='lstm_d100.pth')``.
            Defaults to None: ``BlackboxRanker`` with this loss's
            ``lambda_val``, ``normalize_ranks`` and ``positive_rank_grad``
            (which must keep their defaults when a ranker is given).
        calibration (tuple[float, float], optional): ``(a, b)`` of a Platt
            fit, ``p' = sigmoid(a * logit(p) + b)`` with ``a > 0``, applied
            to the test-time foreground scores (:meth:`get_activation`). It
            is monotone, so it changes no ranking and no AP, only what a
            score threshold means; fitted on val by ``tools/study.py``
            (``calibration.platt`` of a run's ``result.json``) or
            ``tools/analysis/fit_score_calibration.py``. Defaults to None.
    """

    def __init__(self,
                 memory: int = 7,
                 margin: float = 0.15,
                 lambda_val: float = 0.5,
                 map_weight: float = 2 / 3,
                 apc_weight: float = 1 / 3,
                 score_space: str = 'logits',
                 normalize_ranks: bool = True,
                 positive_rank_grad: bool = False,
                 loss_weight: float = 1.0,
                 reduction: str = 'mean',
                 global_ranking: bool = False,
                 ranker: Optional[dict] = None,
                 calibration: Optional[Tuple[float, float]] = None) -> None:
        super().__init__()
        if calibration is not None:
            if (not isinstance(calibration, (tuple, list))
                    or len(calibration) != 2
                    or not all(_is_number(v) for v in calibration)
                    or calibration[0] <= 0):
                raise ValueError(
                    'calibration must be (a, b), finite numbers with a > 0 '
                    f'(a monotone Platt map), got {calibration!r}')
            calibration = (float(calibration[0]), float(calibration[1]))
        self.calibration = calibration
        self.global_ranking = bool(global_ranking)
        if isinstance(memory, bool) or not isinstance(memory,
                                                      int) or memory < 0:
            raise ValueError(f'memory must be an int >= 0, got {memory!r}')
        if score_space not in _SCORE_SPACES:
            raise ValueError(f'score_space must be one of {_SCORE_SPACES}, '
                             f'got {score_space!r}')
        for name, value in (('margin', margin), ('map_weight', map_weight),
                            ('apc_weight', apc_weight),
                            ('loss_weight', loss_weight)):
            if not _is_number(value) or value < 0:
                raise ValueError(f'{name} must be a number >= 0, got '
                                 f'{value!r}')
        _check_reduction(reduction, 'reduction')
        self.memory = memory
        self.ranker = self._build_ranker(ranker, lambda_val, normalize_ranks,
                                         positive_rank_grad)
        self.margin = float(margin)
        self.map_weight = float(map_weight)
        self.apc_weight = float(apc_weight)
        self.score_space = score_space
        self.loss_weight = float(loss_weight)
        self.reduction = reduction
        # Hooks read by mmdet's BBoxHead (see CrossEntropyCustomLoss).
        self.custom_cls_channels = True
        self.custom_activation = True
        self.custom_accuracy = True
        self._memory = ScoreMemory(memory, type(self).__name__)

    @staticmethod
    def _build_ranker(ranker: Optional[dict], lambda_val: float,
                      normalize_ranks: bool,
                      positive_rank_grad: bool) -> nn.Module:
        """The ranking back-end; the blackbox one from the loss's own
        arguments unless a ``ranker`` config is given."""
        if ranker is None:
            return BlackboxRanker(lambda_val, normalize_ranks,
                                  positive_rank_grad)
        changed = [
            name for name, value, default in (
                ('lambda_val', lambda_val, 0.5),
                ('normalize_ranks', normalize_ranks, True),
                ('positive_rank_grad', positive_rank_grad, False))
            if value != default
        ]
        if changed:
            raise ValueError(
                f'{", ".join(changed)} of RaMBOAPLoss only configure the '
                f'default ranker; with ranker={ranker!r} set them inside the '
                'ranker config')
        if isinstance(ranker, nn.Module):
            return ranker
        if not isinstance(ranker, dict) or ranker.get('type') not in (
                'BlackboxRanker', 'SigmoidRanker', 'SorterRanker'):
            raise ValueError(
                'ranker must be None or a config dict with type '
                "'BlackboxRanker', 'SigmoidRanker' or 'SorterRanker', got "
                f'{ranker!r}')
        return MODELS.build(ranker)

    # ------------------------------------------------------------ memory
    def _memory_batch(self, like: Tensor):
        """Stored scores and labels as (M, C) tensors (M may be 0)."""
        stored = self._memory.read(like)
        if stored is None:
            return like.new_zeros((0, like.shape[1])), torch.zeros(
                (0, like.shape[1]), dtype=torch.bool, device=like.device)
        return stored

    # ------------------------------------------------------- mmdet hooks
    def _num_classes(self, cls_score: Tensor) -> int:
        return cls_score.shape[-1] - (self.score_space != 'sigmoid')

    def get_cls_channels(self, num_classes: int) -> int:
        """Classifier outputs: C for sigmoid, C + 1 (background last) else.

        Args:
            num_classes (int): Number of foreground classes C.

        Returns:
            int: Number of classifier output channels.
        """
        return num_classes + (self.score_space != 'sigmoid')

    def get_activation(self, cls_score: Tensor) -> Tensor:
        """Test-time scores: within each class, the order the loss ranked.

        NMS and ``VOCMetric`` rank the detections of a class by these
        scores, so each column must be a monotone function of the column
        the loss ranked, or training optimises one ranking and the test
        measures another:

        * 'softmax': softmax over the C + 1 logits (what was ranked).
        * 'logits': ``sigmoid`` of each foreground logit. Not the stock
          softmax: its per-row normalisation reorders a class's RoIs by
          their other (untrained) logits; on DigitsVOC that cost up to 7
          AP50 points (``docs/evidence.md``).
        * 'sigmoid': ``sigmoid`` of the C logits.

        For 'logits' and 'sigmoid' a dummy ``1 - max`` background column is
        appended: ``multiclass_nms`` drops the last column, so it must be
        there. Rank-trained scores have no absolute scale: use
        ``test_cfg.rcnn.score_thr=0`` with them (the configs here do).

        Args:
            cls_score (Tensor): Classifier output (N, C) or (N, C + 1).

        Returns:
            Tensor: Scores of shape (N, C + 1).
        """
        num_classes = self._num_classes(cls_score)
        if self.score_space == 'softmax':
            probs = F.softmax(cls_score, dim=-1)
            if self.calibration is None:
                return probs
            eps = torch.finfo(probs.dtype).eps
            logit = torch.logit(probs[:, :num_classes], eps=eps)
        else:
            logit = cls_score[:, :num_classes]
        if self.calibration is not None:
            a, b = self.calibration
            logit = a * logit + b
        probs = logit.sigmoid()
        background = 1 - probs.max(dim=-1, keepdim=True).values
        return torch.cat([probs, background], dim=-1)

    def get_accuracy(self, cls_score: Tensor,
                     labels: Tensor) -> Dict[str, Tensor]:
        """Top-1 accuracy among the foreground classes on foreground RoIs.

        Background is left out because the loss does not train a background
        score in the 'logits' and 'sigmoid' spaces.

        Args:
            cls_score (Tensor): Classifier output (N, C) or (N, C + 1).
            labels (Tensor): Labels (N,) in 0..C, C = background.

        Returns:
            dict[str, Tensor]: ``{'acc_classes': accuracy in percent}``.
        """
        num_classes = self._num_classes(cls_score)
        foreground = (labels >= 0) & (labels < num_classes)
        return dict(acc_classes=accuracy(
            cls_score[foreground, :num_classes], labels[foreground]))

    # ----------------------------------------------------------- forward
    def _ranked_scores(self, cls_score: Tensor, num_classes: int) -> Tensor:
        work = cls_score.to(rank_dtype(cls_score.dtype))
        if self.score_space == 'softmax':
            return F.softmax(work, dim=-1)[:, :num_classes]
        if self.score_space == 'sigmoid':
            return work.sigmoid()
        return work[:, :num_classes]

    def _check_inputs(self, cls_score: Tensor, labels: Tensor,
                      weight: Optional[Tensor]) -> int:
        if not isinstance(cls_score, Tensor) or cls_score.dim() != 2 \
                or not cls_score.is_floating_point():
            got = getattr(cls_score, 'shape', cls_score)
            raise ValueError('cls_score must be a float tensor (N, '
                             f'num_channels), got {got}')
        num_classes = self._num_classes(cls_score)
        if num_classes < 1:
            raise ValueError(
                f'cls_score has {cls_score.shape[-1]} channels: too few for '
                f"score_space={self.score_space!r} (needs C"
                f"{'' if self.score_space == 'sigmoid' else ' + 1'}, C >= 1)")
        n = cls_score.shape[0]
        if not isinstance(labels, Tensor) or labels.shape != (n, ):
            raise ValueError(f'labels must have shape ({n},), got '
                             f'{getattr(labels, "shape", labels)}')
        if labels.is_floating_point() or (n and bool(
                ((labels < 0) | (labels > num_classes)).any())):
            raise ValueError(
                f'labels must be integers in 0..{num_classes} '
                f'({num_classes} = background) for cls_score of shape '
                f'{tuple(cls_score.shape)} and score_space='
                f'{self.score_space!r}')
        if weight is not None and (not isinstance(weight, Tensor)
                                   or weight.shape != (n, )):
            raise ValueError(f'weight must have shape ({n},), got '
                             f'{getattr(weight, "shape", weight)}')
        if not bool(torch.isfinite(cls_score).all()):
            raise ValueError('cls_score contains NaN or inf')
        return num_classes

    def forward(self,
                cls_score: Tensor,
                labels: Tensor,
                weight: Optional[Tensor] = None,
                avg_factor: Optional[float] = None,
                reduction_override: Optional[str] = None
                ) -> Dict[str, Tensor]:
        """Compute the weighted mAP and APC losses and the diagnostics.

        Args:
            cls_score (Tensor): Classifier output (N, C + 1) with background
                last ('softmax', 'logits') or (N, C) ('sigmoid').
            labels (Tensor): Labels (N,) in 0..C, C = background.
            weight (Tensor, optional): RoI weights (N,); RoIs with weight 0
                are left out, other values only select (AP has no
                per-element weights). Defaults to None.
            avg_factor (float, optional): Ignored: AP is normalised by
                construction. Accepted for the mmdet loss signature.
            reduction_override (str, optional): ``'mean'`` or ``'sum'``;
                ``'none'`` raises (see :func:`_check_reduction`).

        Returns:
            dict[str, Tensor]: ``loss_rambo_map`` and ``loss_rambo_apc``
            (weighted, differentiable) and the diagnostics described in the
            class docstring.
        """
        reduction = self.reduction
        if reduction_override is not None:
            _check_reduction(reduction_override, 'reduction_override')
            reduction = reduction_override
        num_classes = self._check_inputs(cls_score, labels, weight)
        keep = None if weight is None else weight > 0
        scores = self._ranked_scores(cls_score, num_classes)
        targets = F.one_hot(labels.long(), num_classes + 1)[:, :num_classes]
        targets = targets.bool()
        if keep is not None:
            scores, targets = scores[keep], targets[keep]
        if self.global_ranking:
            (scores, targets), _ = gather_for_ranking(scores, targets)
        n = scores.shape[0]
        grad_stats = torch.is_grad_enabled() and cls_score.requires_grad

        old_scores, old_targets = self._memory_batch(scores)
        zero = cls_score.sum() * 0
        if n + old_scores.shape[0] > 0:
            class_rows = torch.cat([scores, old_scores]).t()
            class_labels = torch.cat([targets, old_targets]).t()
            per_class = self.ranker(class_rows, class_labels, self.margin,
                                    reduction, grad_stats)
        else:
            per_class = None
        if n > 0:
            across = self.ranker(scores.reshape(1, -1),
                                 targets.reshape(1, -1), self.margin, 'mean',
                                 grad_stats)
        else:
            across = None

        if self.training and n > 0:
            self._memory.append(scores, targets)

        scale = self.loss_weight
        loss_map = zero if per_class is None else per_class.loss + zero
        loss_apc = zero if across is None else across.loss + zero
        out = dict(
            loss_rambo_map=scale * self.map_weight * loss_map,
            loss_rambo_apc=scale * self.apc_weight * loss_apc)
        if per_class is not None and bool(per_class.valid.any()):
            out['rambo_ap'] = per_class.ap[per_class.valid].mean()
        if grad_stats and n > 0 and per_class.grad is not None:
            out.update(
                self._grad_stats(per_class.grad[:, :n].t(),
                                 across.grad.reshape(n, num_classes),
                                 targets))
        return out

    def _grad_stats(self, grad_map: Tensor, grad_apc: Tensor,
                    targets: Tensor) -> Dict[str, Tensor]:
        """Push directions of the current scores under the combined loss."""
        grad = self.map_weight * grad_map + self.apc_weight * grad_apc
        stats = dict(rambo_grad_density=(grad != 0).float().mean())
        if bool(targets.any()):
            stats['rambo_pos_grad_frac'] = (grad[targets] < 0).float().mean()
        if bool((~targets).any()):
            stats['rambo_neg_grad_frac'] = (grad[~targets] > 0).float().mean()
        return stats
