"""Rank & Sort Loss (Oksuz et al., ICCV 2021) and AP Loss's error-driven
update (Chen et al., CVPR 2019), for a detection head's ``loss_cls``.

Both are the shared core of :mod:`.error_driven` in one mode: ``'rs'``
ranks every positive above every negative (ranking error ``N_FP(i) /
rank(i)``) and sorts the positives by their continuous labels (the IoU of
their predicted box, sorting error minus its target); ``'ap'`` is the
ranking error alone, ``1 - AP`` with the smoothed step. Values, updates and
the cost are documented in :mod:`.error_driven` and ``docs/rank_sort.md``.
"""
from typing import Dict

from torch import Tensor

from mmdet.registry import MODELS

from .error_driven import ErrorDrivenDetectionLoss

__all__ = ['RankSortLoss', 'ErrorDrivenAPLoss']


@MODELS.register_module()
class RankSortLoss(ErrorDrivenDetectionLoss):
    """Rank & Sort Loss over all (anchor, class) scores of a batch.

    ``L_RS = 1/|P| sum_{i in P} (l_R(i) + l_S(i) - l*_S(i))`` with the
    identity update of the paper (:mod:`.error_driven`, mode ``'rs'``). The
    positives' labels are ``quality`` (the IoU of each positive's predicted
    box with its ground truth, detached, given by the head); without it
    every positive has label 1 and the sorting error is 0.

    Called as :meth:`~.error_driven.ErrorDrivenDetectionLoss.forward` with
    ``quality=`` (N,) labels in [0, 1], read at the positive rows. Outputs
    ``loss_rank_sort`` and the logged ``rs_ranking`` and ``rs_sorting``,
    the two parts of the value.

    Args:
        delta (float, optional): Half-width of the smoothed step in logit
            units, > 0. Defaults to None: 0.5 (paper).
        score_space (str): Defaults to ``'logits'``.
        loss_weight (float): Defaults to 1.0.
    """
    mode = 'rs'
    default_delta = 0.5
    per_anchor_input = 'quality'

    def _outputs(self, loss, parts, loc_weight, loc_error,
                 zero) -> Dict[str, Tensor]:
        return dict(loss_rank_sort=self.loss_weight * (loss + zero),
                    rs_ranking=parts[0], rs_sorting=parts[1])


@MODELS.register_module()
class ErrorDrivenAPLoss(ErrorDrivenDetectionLoss):
    """AP Loss (Chen et al., CVPR 2019): ``1 - AP`` of all (anchor, class)
    scores with the smoothed step, trained by the error-driven update
    (:mod:`.error_driven`, mode ``'ap'``: Rank & Sort Loss without the
    sorting error). The paper's minibatch training and its interval
    function (the smoothed step with ``delta = 1``) are here; its
    "minibatch training" memory of several batches is not.

    Outputs ``loss_ap``.

    Args:
        delta (float, optional): Half-width of the smoothed step, > 0.
            Defaults to None: 1.0 (paper).
        score_space (str): Defaults to ``'logits'``.
        loss_weight (float): Defaults to 1.0.
    """
    mode = 'ap'
    default_delta = 1.0

    def _outputs(self, loss, parts, loc_weight, loc_error,
                 zero) -> Dict[str, Tensor]:
        return dict(loss_ap=self.loss_weight * (loss + zero))
