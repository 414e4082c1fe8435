"""FCOS (anchor-free) heads trained with the rank losses.

MMDetection's ``FCOSHead.loss_by_feat`` already scores all points of all
FPN levels and images in one ``loss_cls`` call (unlike ``AnchorHead`` and
``ATSSHead``, which call it once per level), so no per-level recorder is
needed to rank the batch as one sequence. The heads here still go through
:class:`~.dense_heads.RankLossDenseHeadMixin` and
:class:`~.rank_sort_heads.ErrorDrivenDenseHeadMixin`, so that the sigmoid
channels, the hidden loss at prediction, the RaMBO calibration, the IoU
labels and the value-weighted box loss are those of the other dense heads,
and the stock code keeps the targets (regress ranges, center sampling,
``norm_on_bbox``) and the box decoding.

FCOS's centerness (a branch predicting how central a point lies in its box,
trained by binary cross-entropy on the positives; the stock head also
weights each positive's box loss by its centerness target and multiplies
the test scores by the predicted centerness):

* :class:`RaMBOFCOSHead` keeps it as the stock head does, the treatment of
  ATSS's centerness in ``RaMBOATSSHead``. RaMBO (with the stock focal loss
  in ``MixedRankLoss``) ranks the classification logits by class only; it
  has no localisation target, so the centerness stays the detector's
  estimate of box quality: its loss, the centerness-weighted box loss and
  the test scores ``sigmoid(logit) * sigmoid(centerness)`` are the stock
  ones.
* :class:`RankSortFCOSHead` drops it, as the RS paper drops ATSS's
  centerness (and PAA's IoU branch): RS sorts the positives by the IoU of
  their predicted boxes, which is the role centerness plays. The branch is
  still built (checkpoints keep their shape), its loss is a zero connected
  to the graph (DDP sees every parameter), the box loss is the RS heads'
  (GIoU of each positive weighted by its detached highest class score, not
  by its centerness target, rescaled to the RS value) and the test scores
  are ``sigmoid(logit)`` alone.

The authors of Rank & Sort publish no anchor-free head or config (their
dense detectors are ATSS and PAA); :class:`RankSortFCOSHead` applies their
ATSS recipe to FCOS's points.
"""
from mmdet.models.dense_heads import FCOSHead
from mmdet.registry import MODELS

from ..losses.rank_sort_loss import RankSortLoss
from .dense_heads import RankLossDenseHeadMixin
from .rank_sort_heads import (
    BoxWeightingMixin,
    ErrorDrivenDenseHeadMixin,
    NoCenternessPredictMixin,
)

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
