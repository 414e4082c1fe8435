"""A rank loss plus an auxiliary classification loss on the same scores.

The RaMBO AP loss moves the few scores whose rank crosses another's, so a
detector trained by it alone starts slowly; an auxiliary loss with a gradient
for every score (per-class binary cross-entropy) gives a dense signal while the
rank loss orders what matters for AP (docs/evidence.md)."""
from typing import Dict, Optional

from torch import Tensor, nn

from ..ops.checks import check_choice, check_flag
from ..optional_mmdet import MODELS, require_mmdet
from .score_space import ClsHooksMixin
from .utils import TermsLoss, zero_loss

__all__ = ['MixedRankLoss']


@MODELS.register_module()
class MixedRankLoss(TermsLoss, ClsHooksMixin, nn.Module):
    """``rank_loss + aux_loss`` for a bbox head's ``loss_cls``
    (docs/losses.md#mixedrankloss).

    The head hooks are the rank loss's (the test ranks what it ranked); the
    auxiliary loss gets the head's ``weight`` and ``avg_factor`` unchanged.
    Returns the scalar sum; with ``log_diagnostics`` the dict of :meth:`terms`:
    the rank loss's terms and diagnostics (``loss_rank`` for a rank loss
    without ``terms``) and the auxiliary loss under ``aux_name``. Needs
    MMDetection (ImportError naming the install without it).

    Args:
        rank_loss (dict): Config of a rank loss with the custom-classifier
            hooks of mmdet's ``BBoxHead`` (e.g. ``RaMBOAPLoss``).
        aux_loss (dict): Config of an mmdet classification loss. Defaults to a
            per-class sigmoid ``CrossEntropyLoss`` (background RoIs negatives
            of every class), whose sigmoid is the 'logits' space's test score.
        aux_columns (str): ``'foreground'`` (the C columns the rank loss ranks)
            or ``'all'`` (e.g. softmax cross-entropy).
        aux_name (str): Key of the auxiliary loss among the terms; must start
            with ``loss`` so that the runner adds it to the total.
        log_diagnostics (bool): Return the dict of :meth:`terms` instead of the
            scalar loss. Defaults to False.
    """

    def __init__(self,
                 rank_loss: dict,
                 aux_loss: Optional[dict] = None,
                 aux_columns: str = 'foreground',
                 aux_name: str = 'loss_cls_aux',
                 log_diagnostics: bool = False) -> None:
        super().__init__()
        owner = type(self).__name__
        require_mmdet(owner)  # the auxiliary loss is MMDetection's
        check_choice(owner, 'aux_columns', aux_columns, ('foreground', 'all'))
        self.log_diagnostics = check_flag(owner, 'log_diagnostics',
                                          log_diagnostics)
        if not isinstance(aux_name, str) or not aux_name.startswith('loss'):
            raise ValueError(f"{owner}: aux_name must be a string starting "
                             "with 'loss' "
                             '(only those are added to the total loss), got '
                             f'{aux_name!r}')
        if aux_loss is None:
            aux_loss = dict(
                type='CrossEntropyLoss', use_sigmoid=True, loss_weight=1.0)
        self.rank_loss = MODELS.build(rank_loss)
        for hook in ('get_cls_channels', 'get_activation', 'get_accuracy'):
            if not callable(getattr(self.rank_loss, hook, None)):
                raise ValueError(
                    f'{owner}: rank_loss {type(self.rank_loss).__name__} has '
                    f'no {hook}(): MixedRankLoss needs a rank loss with the '
                    'custom-classifier hooks of mmdet BBoxHead')
        self.aux_loss = MODELS.build(aux_loss)
        self.aux_columns = aux_columns
        self.aux_name = aux_name

    @property
    def cls_hooks(self) -> nn.Module:
        """The head hooks are the rank loss's."""
        return self.rank_loss

    def terms(self, cls_score: Tensor, labels: Tensor,
              weight: Optional[Tensor] = None,
              avg_factor: Optional[float] = None,
              reduction_override: Optional[str] = None,
              diagnostics: Optional[bool] = None) -> Dict[str, Tensor]:
        """The rank loss's terms plus ``aux_name``.

        Args:
            cls_score (Tensor): Classifier output (N, channels) with the
                rank loss's channel count.
            labels (Tensor): Labels (N,) in 0..C, C = background.
            weight (Tensor, optional): RoI weights (N,).
            avg_factor (float, optional): Normaliser of the auxiliary loss.
            reduction_override (str, optional): Passed to both losses.
            diagnostics (bool, optional): Add the rank loss's diagnostics.
                Defaults to None: ``log_diagnostics``.

        Returns:
            dict[str, Tensor]: The rank loss's terms (and diagnostics) and
            the auxiliary loss.
        """
        if diagnostics is None:
            diagnostics = self.log_diagnostics
        terms = getattr(self.rank_loss, 'terms', None)
        if terms is not None:
            out = terms(cls_score, labels, weight, avg_factor=avg_factor,
                        reduction_override=reduction_override,
                        diagnostics=diagnostics)
        else:
            out = self.rank_loss(
                cls_score,
                labels,
                weight,
                avg_factor=avg_factor,
                reduction_override=reduction_override)
        if not isinstance(out, dict):
            out = dict(loss_rank=out)
        if self.aux_name in out:
            raise ValueError(f'{type(self).__name__}: aux_name '
                             f'{self.aux_name!r} is a key of the rank loss '
                             'output already')
        aux_score = cls_score
        if self.aux_columns == 'foreground':
            # get_cls_channels(0) = the channels beyond the C foreground
            # ones (a background column, last)
            extra = self.rank_loss.get_cls_channels(0)
            aux_score = cls_score[:, :cls_score.shape[-1] - extra]
        if not len(cls_score):  # an empty mean would be NaN
            out[self.aux_name] = zero_loss(cls_score)
            return out
        out[self.aux_name] = self.aux_loss(
            aux_score.float(),
            labels,
            weight,
            avg_factor=avg_factor,
            reduction_override=reduction_override)
        return out
