"""Rank & Sort Loss (Oksuz et al., ICCV 2021) and AP Loss's error-driven
update (Chen et al., CVPR 2019), for a detection head's ``loss_cls``.

Both are the shared core of :mod:`.error_driven` in one mode: ``'rs'``
ranks every positive above every negative (ranking error ``N_FP(i) /
rank(i)``) and sorts the positives by their continuous labels (the IoU of
their predicted box, sorting error minus its target); ``'ap'`` is the
ranking error alone, ``1 - AP`` with the smoothed step. Values, updates and
the cost are documented in :mod:`.error_driven` and ``docs/losses.md``.
"""
from typing import Dict, Optional

from torch import Tensor

from ..ops.checks import check_flag
from ..optional_mmdet import MODELS
from .error_driven import check_self_relation
from .error_driven_head import ErrorDrivenDetectionLoss

__all__ = ['RankSortLoss', 'ErrorDrivenAPLoss']


@MODELS.register_module()
class RankSortLoss(ErrorDrivenDetectionLoss):
    """Rank & Sort Loss over all (anchor, class) scores of a batch.

    ``L_RS = 1/|P| sum_{i in P} (l_R(i) + l_S(i) - l*_S(i))`` with the
    identity update of the paper (:mod:`.error_driven`, mode ``'rs'``). The
    positives' labels are ``quality`` (the IoU of each positive's predicted
    box with its ground truth, detached, given by the head); without it
    every positive has label 1 and the sorting error is 0. The defaults
    follow the authors' code.

    Called as :meth:`~.error_driven_head.ErrorDrivenDetectionLoss.forward`
    with ``quality=`` (N,) labels in [0, 1], read at the positive rows.
    Outputs ``loss_rank_sort`` and the logged ``rs_ranking`` and
    ``rs_sorting``, the two parts of the value.

    Args:
        delta (float, optional): Half-width of the smoothed step in logit
            units, > 0. Defaults to None: 0.5 (paper).
        score_space (str): Defaults to ``'logits'``.
        loss_weight (float): Defaults to 1.0.
        precision (str): The core's dtype, ``'float64'`` or ``'float32'``
            (:class:`~.error_driven_head.ErrorDrivenDetectionLoss`).
            Defaults to ``'float64'``.
        self_relation (float): A positive's relation to itself in its ranks
            and sorting errors, in (0, 1]. Defaults to 0.5 (authors: ``H(0)``);
            1.0 counts it once (the earlier behaviour: smaller ranking
            errors, see :mod:`.error_driven` for the measured effect).
        zero_quality_as_negative (bool): With ``quality``, a positive whose
            label is exactly 0 (its box does not overlap its ground truth)
            is ranked as a negative of its class and gets a negative's
            update, as in the authors' code (positives: label > 0).
            Defaults to True; False keeps it a positive with label 0 (the
            earlier behaviour: pushed up by the ranking error, down by the
            sorting error). On the case measured in :mod:`.error_driven`
            with 3 of the 20 labels set to 0, False changes the value by
            +5.7 % (-20 % with the positives raised by 3) and the update by
            31 % (28 %) of its largest entry.
    """
    mode = 'rs'
    default_delta = 0.5
    per_anchor_input = 'quality'

    def __init__(self, delta: Optional[float] = None,
                 score_space: str = 'logits', loss_weight: float = 1.0,
                 self_relation: float = 0.5,
                 zero_quality_as_negative: bool = True,
                 precision: str = 'float64') -> None:
        super().__init__(delta, score_space, loss_weight, precision)
        owner = type(self).__name__
        self.self_relation = check_self_relation(owner, self_relation)
        self.zero_quality_as_negative = check_flag(
            owner, 'zero_quality_as_negative', zero_quality_as_negative)

    def extra_repr(self) -> str:
        return (f'{super().extra_repr()}, self_relation={self.self_relation}'
                f', zero_quality_as_negative={self.zero_quality_as_negative}')

    def _core_options(self) -> dict:
        return dict(self_relation=self.self_relation)

    def _positive_rows(self, rows: Tensor,
                       quality: Optional[Tensor]) -> Tensor:
        if quality is None or not self.zero_quality_as_negative:
            return rows
        return rows & (quality > 0)

    def _outputs(self, loss, parts, loc_weight,
                 loc_error) -> Dict[str, Tensor]:
        return dict(loss_rank_sort=self.loss_weight * loss,
                    rs_ranking=parts[0], rs_sorting=parts[1])


@MODELS.register_module()
class ErrorDrivenAPLoss(ErrorDrivenDetectionLoss):
    """AP Loss (Chen et al., CVPR 2019): ``1 - AP`` of all (anchor, class)
    scores with the smoothed step, trained by the error-driven update
    (:mod:`.error_driven`, mode ``'ap'``: Rank & Sort Loss with
    ``self_relation=1.0`` and no labels). The paper's minibatch training
    and its interval function (the smoothed step with ``delta = 1``) are
    here; its "minibatch training" memory of several batches is not.

    Outputs ``loss_ap``.

    Args:
        delta (float, optional): Half-width of the smoothed step, > 0.
            Defaults to None: 1.0 (paper).
        score_space (str): Defaults to ``'logits'``.
        loss_weight (float): Defaults to 1.0.
        precision (str): The core's dtype, ``'float64'`` or ``'float32'``
            (:class:`~.error_driven_head.ErrorDrivenDetectionLoss`).
            Defaults to ``'float64'``.
    """
    mode = 'ap'
    default_delta = 1.0

    def _outputs(self, loss, parts, loc_weight,
                 loc_error) -> Dict[str, Tensor]:
        return dict(loss_ap=self.loss_weight * loss)
