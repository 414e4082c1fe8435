"""What a detection rank loss ranks, and the test-time scores that follow.

A classification head gives logits; a rank loss must choose which numbers
it ranks (its *score space*), and the test must then rank the detections
of a class by a monotone function of the same numbers, or training
optimises one ranking and the test measures another. :class:`ScoreSpace`
owns that choice and derives from it the three custom-classifier hooks of
mmdet's ``BBoxHead`` (``get_cls_channels``, ``get_activation``,
``get_accuracy``) and the head-side input checks; :class:`ClsHooksMixin`
gives a loss module those hooks from its score space (or from a wrapped
loss). The choices and why: ``docs/detection.md``.
"""
from typing import Dict, Optional, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from ..ops.checks import all_finite, check_choice, check_data, check_number
from ..ops.device import reads_are_free
from ..ops.ranking import rank_dtype

__all__ = ['SCORE_SPACES', 'ScoreSpace', 'ClsHooksMixin']

SCORE_SPACES = ('sigmoid', 'softmax', 'logits')


class ScoreSpace:
    """The scores a detection rank loss ranks (docs/detection.md).

    * ``'logits'``: the first C raw logits of a stock C + 1 channel head (the
      background logit unused), ``sigmoid`` at test time; the default, the only
      space where the paper's margin and lambda move a fresh head.
    * ``'softmax'``: the first C columns of the softmax over C + 1 logits
      (background last); softmax at test time.
    * ``'sigmoid'``: C logits (a head of C channels), ranked as ``sigmoid``.

    Args:
        name (str): One of :data:`SCORE_SPACES`.
        calibration (tuple[float, float], optional): Platt ``(a, b)``, ``p' =
            sigmoid(a * logit(p) + b)`` with ``a > 0``, on the test-time
            foreground scores (monotone: no AP change; docs/thresholds.md).
            Defaults to None.
        owner (str): Component named in error messages.
    """

    def __init__(self,
                 name: str = 'logits',
                 calibration: Optional[Sequence[float]] = None,
                 owner: str = 'ScoreSpace') -> None:
        self.owner = owner
        self.name = check_choice(owner, 'score_space', name, SCORE_SPACES)
        if calibration is not None:
            requirement = ('calibration must be (a, b), finite numbers '
                           'with a > 0 (a monotone Platt map), got '
                           f'{calibration!r}')
            if not isinstance(calibration, (tuple, list)) or \
                    len(calibration) != 2:
                raise ValueError(f'{owner}: {requirement}')
            try:
                calibration = (check_number(owner, 'calibration[0]',
                                            calibration[0], 0, low_open=True),
                               check_number(owner, 'calibration[1]',
                                            calibration[1]))
            except ValueError as error:
                raise ValueError(f'{owner}: {requirement}') from error
        self.calibration = calibration

    def __repr__(self) -> str:
        return f'ScoreSpace({self.name!r}, calibration={self.calibration})'

    @property
    def extra_channels(self) -> int:
        """Channels beyond the C foreground ones (a background column)."""
        return int(self.name != 'sigmoid')

    def num_classes(self, cls_score: Tensor) -> int:
        """C of a classifier output (N, C) or (N, C + 1)."""
        return cls_score.shape[-1] - self.extra_channels

    def ranked(self, cls_score: Tensor, num_classes: int) -> Tensor:
        """The (N, C) scores the loss ranks, in the rank dtype (>= fp32)."""
        work = cls_score.to(rank_dtype(cls_score.dtype))
        if self.name == 'softmax':
            return F.softmax(work, dim=-1)[:, :num_classes]
        if self.name == 'sigmoid':
            return work.sigmoid()
        return work[:, :num_classes]

    def check_inputs(self, cls_score: Tensor, labels: Tensor,
                     weight: Optional[Tensor]) -> int:
        """Validate a head's ``(cls_score, labels, weight)``; returns C.

        The value checks (finite scores, labels in 0..C) are
        :func:`~mmdet_rankloss.ops.checks.check_data`: one read on the CPU,
        none on a device (one assertion there, of both).
        """
        owner = self.owner
        if not isinstance(cls_score, Tensor) or cls_score.dim() != 2 \
                or not cls_score.is_floating_point():
            got = getattr(cls_score, 'shape', cls_score)
            raise ValueError(f'{owner}: cls_score must be a float tensor (N, '
                             f'num_channels), got {got}')
        num_classes = self.num_classes(cls_score)
        if num_classes < 1:
            raise ValueError(
                f'{owner}: cls_score has {cls_score.shape[-1]} channels: too '
                f'few for score_space={self.name!r} (needs C'
                f"{' + 1' if self.extra_channels else ''}, C >= 1)")
        n = cls_score.shape[0]
        if not isinstance(labels, Tensor) or labels.shape != (n, ):
            raise ValueError(f'{owner}: labels must have shape ({n},), got '
                             f'{getattr(labels, "shape", labels)}')
        if weight is not None and (not isinstance(weight, Tensor)
                                   or weight.shape != (n, )):
            raise ValueError(f'{owner}: weight must have shape ({n},), got '
                             f'{getattr(weight, "shape", weight)}')
        # a device assertion's message is static: one with a (symbolic)
        # shape breaks torch.compile(fullgraph=True) at a second N
        label_range = ('labels must be integers in 0..C (C = background, '
                       'C the classes of cls_score in its score_space)')
        if reads_are_free(cls_score):
            label_range = (f'labels must be integers in 0..{num_classes} '
                           f'({num_classes} = background) for cls_score of '
                           f'shape {tuple(cls_score.shape)} and '
                           f'score_space={self.name!r}')
        if not n or labels.is_floating_point():
            check_data(owner, [(not labels.is_floating_point(), label_range)])
            return num_classes
        out_of_range = labels.clamp(0, num_classes).ne(labels)  # (N,)
        if reads_are_free(cls_score):  # one read, each failure named
            conditions = [
                (out_of_range.logical_not().all(), label_range),
                (all_finite(cls_score), 'cls_score contains NaN or inf')]
        else:  # one device assertion for both: x * 0 is 0 for a finite x
            # (NaN else), and must equal 0, not 1, on a row whose label is
            # out of range
            conditions = [(cls_score.mul(0).eq(out_of_range[:, None]).all(),
                           f'cls_score contains NaN or inf, or {label_range}')]
        check_data(owner, conditions)
        return num_classes

    # --------------------------------------------------- mmdet BBoxHead hooks
    def get_cls_channels(self, num_classes: int) -> int:
        """Classifier outputs: C for sigmoid, C + 1 (background last) else."""
        return num_classes + self.extra_channels

    def get_activation(self, cls_score: Tensor) -> Tensor:
        """Test-time scores (N, C + 1): within each class, the loss's order.

        NMS and ``VOCMetric`` rank a class's detections by these, so each
        column is a monotone function of the column the loss ranked:
        softmax over the C + 1 logits for 'softmax', ``sigmoid`` of each
        foreground logit for 'logits' and 'sigmoid'. (The stock softmax
        would reorder a class's RoIs by their other, untrained logits; on
        DigitsVOC that cost up to 7 AP50 points, ``docs/evidence.md``.)
        For 'logits' and 'sigmoid' a dummy ``1 - max`` background column
        is appended, because ``multiclass_nms`` drops the last column.
        Rank-trained scores have no absolute scale: use
        ``test_cfg.rcnn.score_thr=0`` with them.
        """
        num_classes = self.num_classes(cls_score)
        if self.name == 'softmax':
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
        """``acc_classes``: top-1 among the C classes on foreground RoIs
        (no background score is trained in the 'logits' and 'sigmoid'
        spaces)."""
        num_classes = self.num_classes(cls_score)
        foreground = (labels >= 0) & (labels < num_classes)
        # mmdet's top-1 accuracy (percent; 0 without foreground) counted
        # on every RoI and masked: a boolean index would read the device
        predicted = cls_score[:, :num_classes].topk(1, dim=1).indices[:, 0]
        correct = (predicted == labels) & foreground
        return dict(acc_classes=correct.sum(dtype=cls_score.dtype).mul(
            100.0).div(foreground.sum().clamp(min=1)).reshape(1))


class ClsHooksMixin:
    """The custom-classifier hooks of mmdet's ``BBoxHead``, delegated.

    ``BBoxHead`` asks its ``loss_cls`` for ``custom_cls_channels``,
    ``custom_activation`` and ``custom_accuracy``; a loss with this mixin
    answers them from ``self.cls_hooks``: a :class:`ScoreSpace`, or a
    wrapped loss that has the hooks itself.
    """
    custom_cls_channels = True
    custom_activation = True
    custom_accuracy = True

    @property
    def cls_hooks(self):
        """What answers the hooks: a :class:`ScoreSpace` or a loss."""
        raise NotImplementedError(
            f'{type(self).__name__} uses ClsHooksMixin but does not define '
            'the cls_hooks property, which returns the ScoreSpace (or the '
            "wrapped loss) that answers BBoxHead's classifier hooks")

    def get_cls_channels(self, num_classes: int) -> int:
        """Number of classifier output channels for C classes."""
        return self.cls_hooks.get_cls_channels(num_classes)

    def get_activation(self, cls_score: Tensor) -> Tensor:
        """Test-time scores (N, C + 1), ranked per class as in training."""
        return self.cls_hooks.get_activation(cls_score)

    def get_accuracy(self, cls_score: Tensor,
                     labels: Tensor) -> Dict[str, Tensor]:
        """Accuracy logged by the head."""
        return self.cls_hooks.get_accuracy(cls_score, labels)
