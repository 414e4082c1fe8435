"""RS-PAA: MMDetection's ``PAAHead`` trained by Rank & Sort Loss, as in the
RS paper's PAA (Oksuz et al., ICCV 2021; the authors' ``RankBasedPAAHead``).

PAA (Kim and Lee, ECCV 2020) scores every candidate anchor of a ground
truth by a classification loss plus a box loss, fits a two-component GMM to
those scores and keeps the low-loss component as positives. RS-PAA keeps
that assignment, scored as the authors score it (focal loss + GIoU, the
``assign_cls_loss`` below), and trains the head with the RS heads of
:mod:`.rank_sort_heads`: RS over all anchors of the batch with the IoU of
each positive's predicted box as its label, the score-weighted GIoU box loss
rescaled to the RS value, and no IoU branch (its loss is a zero in the graph
and its prediction does not scale the test scores: the authors' head has no
such branch).
"""
from typing import List

from mmengine.structures import InstanceData
from torch import Tensor

from mmdet.models.dense_heads import PAAHead
from mmdet.registry import MODELS
from ..losses.rank_sort_loss import RankSortLoss
from .rank_sort_heads import BoxWeightingMixin, ErrorDrivenDenseHeadMixin

__all__ = ['RankSortPAAHead']


@MODELS.register_module()
class RankSortPAAHead(BoxWeightingMixin, ErrorDrivenDenseHeadMixin, PAAHead):
    """``PAAHead`` trained by Rank & Sort Loss (RS-PAA; module doc).

    Args:
        assign_cls_loss (dict): The classification loss of PAA's anchor
            score (what the GMM separates, plus the configured
            ``loss_bbox`` of each candidate, unweighted). Defaults to the
            authors' focal loss (gamma 2, alpha 0.25, weight 1).
        box_weighting (str): ``'score'`` (default) or ``'uniform'``
            (:func:`~.rank_sort_heads.box_loss_weights`).
        *args, **kwargs: ``PAAHead``'s, with
            ``loss_cls=dict(type='RankSortLoss')``, a box loss on boxes
            (``GIoULoss``) and ``reg_decoded_bbox=True``.

    Losses: ``loss_rank_sort``, ``loss_bbox`` and the zero ``loss_iou``.
    """
    loss_types = (RankSortLoss, )
    dropped_losses = ('loss_iou', )

    def __init__(self, *args,
                 assign_cls_loss: dict = dict(
                     type='FocalLoss', use_sigmoid=True, gamma=2.0,
                     alpha=0.25, loss_weight=1.0),
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.assign_cls_loss = MODELS.build(assign_cls_loss)

    def get_pos_loss(self, *args) -> tuple:
        """The stock anchor score of PAA's candidates with
        ``assign_cls_loss`` and the configured box loss in place of the
        recorders that stand in for them while the stock ``loss_by_feat``
        runs (:class:`~.rank_sort_heads.ErrorDrivenDenseHeadMixin`)."""
        context = getattr(self, '_box_context', None)
        box_loss = context[1] if context else self._modules['loss_bbox']
        saved = self._modules['loss_cls'], self._modules['loss_bbox']
        self._modules['loss_cls'] = self.assign_cls_loss
        self._modules['loss_bbox'] = box_loss
        try:
            return super().get_pos_loss(*args)
        finally:
            self._modules['loss_cls'], self._modules['loss_bbox'] = saved

    def _predict_by_feat_single(self, cls_score_list: List[Tensor],
                                bbox_pred_list: List[Tensor],
                                score_factor_list: List[Tensor], *args,
                                **kwargs) -> InstanceData:
        """The stock prediction on the class scores alone: the IoU factor's
        logits are set to +inf (factor 1), so the stock pre-NMS top-k by
        ``sqrt(score * factor)`` is the top-k by score."""
        ones = [bbox.new_full((self.num_base_priors, ) + bbox.shape[-2:],
                              float('inf')) for bbox in bbox_pred_list]
        return super()._predict_by_feat_single(cls_score_list, bbox_pred_list,
                                               ones, *args, **kwargs)

    def _bbox_post_process(self, results: InstanceData, *args,
                           **kwargs) -> InstanceData:
        """The stock NMS and score voting on ``sqrt(score^2 * 1)``, i.e. on
        the score itself (IEEE ``sqrt(x * x) == x`` for scores above 1e-19,
        float32; smaller ones underflow to 0)."""
        results.scores = results.scores.square()
        return super()._bbox_post_process(results, *args, **kwargs)
