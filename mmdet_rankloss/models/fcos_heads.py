"""FCOS (anchor-free) heads trained with the rank losses
(docs/dense.md#fcos-anchor-free).

MMDetection's ``FCOSHead.loss_by_feat`` already scores all points of all
FPN levels and images in one ``loss_cls`` call, so no per-level recorder is
needed; the heads still go through
:class:`~.dense_heads.RankLossDenseHeadMixin` and
:class:`~.rank_sort_heads.ErrorDrivenDenseHeadMixin`, so the sigmoid
channels, the hidden loss at prediction, the RaMBO calibration, the IoU
labels and the value-weighted box loss are the other dense heads', and the
stock code keeps the targets and the box decoding.
:class:`RaMBOFCOSHead` keeps the centerness branch as the stock head does;
:class:`RankSortFCOSHead` drops it, as the RS paper drops ATSS's: the
branch is still built, its loss is a zero connected to the graph, the box
loss is the RS heads' and the test scores are ``sigmoid(logit)`` alone.
"""
from mmdet.models.dense_heads import FCOSHead
from mmdet.registry import MODELS
from ..losses.rank_sort_loss import RankSortLoss
from .dense_heads import RankLossDenseHeadMixin
from .rank_sort_heads import (BoxWeightingMixin, ErrorDrivenDenseHeadMixin,
                              NoCenternessPredictMixin)

__all__ = ['RaMBOFCOSHead', 'RankSortFCOSHead']


@MODELS.register_module()
class RaMBOFCOSHead(RankLossDenseHeadMixin, FCOSHead):
    """``FCOSHead`` whose ``loss_cls`` (the RaMBO AP loss, alone or with the
    stock focal loss in ``MixedRankLoss``) ranks all points of all levels
    and images at once; box and centerness losses and the prediction
    (centerness included) are the stock ones. See the module doc and
    :class:`RankLossDenseHeadMixin`. Arguments are ``FCOSHead``'s, with a
    rank loss as ``loss_cls``."""


@MODELS.register_module()
class RankSortFCOSHead(BoxWeightingMixin, NoCenternessPredictMixin,
                       ErrorDrivenDenseHeadMixin, FCOSHead):
    """``FCOSHead`` trained by Rank & Sort Loss over all points of the
    batch, with the IoU of each positive's predicted box as its label, the
    value-weighted box loss and no centerness (module doc). Arguments are
    ``FCOSHead``'s (``loss_cls=dict(type='RankSortLoss')``, a box loss on
    boxes such as ``dict(type='GIoULoss')``) and ``box_weighting``
    (``'score'``, default, or ``'uniform'``; see
    :func:`~.rank_sort_heads.box_loss_weights`)."""
    loss_types = (RankSortLoss, )
    #: FCOS always hands decoded boxes (its ``DistancePointBBoxCoder``'s)
    #: to ``loss_bbox``; it takes no ``reg_decoded_bbox`` argument. With
    #: ``norm_on_bbox`` the training boxes are in units of the level's
    #: stride around the point, which leaves IoU and GIoU unchanged.
    reg_decoded_bbox = True
