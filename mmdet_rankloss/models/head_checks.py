"""A ``loss_cls`` of this package that its head cannot serve fails the build.

MMDetection never asks whether a head and its ``loss_cls`` fit; three misfits
with this package's losses pass the build silently (docs/reliability.md): an
embedding loss as ``loss_cls`` (a ``TypeError`` at the first forward), a loss
that sets the classifier's width in a head that ignores it (a silent column
mismatch), and a rank loss in a stock dense head (each FPN level ranked alone).
:func:`head_fit_faults` finds them on a built module; ``checked_build_func``,
installed in every ``MODELS`` registry by the patch ``head_fit_check``, runs it
on each head built, so ``Runner.from_cfg`` stops before any data is read,
naming the config field, its value and the fix."""
import inspect
import threading
from typing import Any, List, Optional, Tuple

import torch.nn as nn

__all__ = ['HeadFitError', 'head_fit_faults']

_PACKAGE = __name__.split('.')[0]


class HeadFitError(ValueError):
    """A ``loss_cls`` that its head cannot serve.

    Attributes:
        faults (list[str]): One message per misfit.
    """

    def __init__(self, message: str, faults: List[str]) -> None:
        super().__init__(message)
        self.faults = faults


def _ours(loss: nn.Module) -> bool:
    return type(loss).__module__.split('.')[0] == _PACKAGE


def classifier_of(head: nn.Module) -> Tuple[str, int]:
    """(attribute, class channels) of a head's classification layer, or
    ('', -1) when it has none that can be read off."""
    for name, layer in head.named_children():
        if not name.endswith('_cls'):
            continue
        if isinstance(layer, nn.Linear):
            return name, layer.out_features
        if isinstance(layer, nn.Conv2d):
            priors = getattr(head, 'num_base_priors', 1)
            return name, layer.out_channels // priors
    return '', -1


def _rank_loss(loss: nn.Module) -> bool:
    """A loss that ranks (it has a score space), or wraps one."""
    return any(
        getattr(module, 'score_space', None) is not None
        for module in (loss, getattr(loss, 'rank_loss', None)))


def _head_faults(head: nn.Module) -> List[str]:
    """Misfits of one head's ``loss_cls`` (messages without the path)."""
    loss = head.loss_cls
    head_name = type(head).__name__
    try:
        inspect.signature(loss.forward).bind(
            None, None, None, avg_factor=None, reduction_override=None)
    except TypeError:
        return [
            f'forward{inspect.signature(loss.forward)} cannot take the '
            'classification-loss call (cls_score, labels, label_weights, '
            'avg_factor=, reduction_override=) of the head; use a '
            'classification loss '
            'there (e.g. RaMBOAPLoss), and embedding losses in a '
            'RetrievalModel'
        ]
    faults = []
    from mmdet.models.dense_heads.base_dense_head import BaseDenseHead
    from .dense_heads import RankLossDenseHeadMixin
    if isinstance(head, RankLossDenseHeadMixin):
        return faults  # its _init_layers checked the loss and set channels
    if _rank_loss(loss) and isinstance(head, BaseDenseHead):
        from mmdet.models.dense_heads import FCOSHead
        if isinstance(head, FCOSHead):
            faults.append(
                f'the stock {head_name} does not give a rank loss what it '
                'ranks (its test-time scores would not be the ranked ones, '
                "and the centerness stays as focal loss's); use "
                "type='RaMBOFCOSHead' or 'RankSortFCOSHead'")
        else:
            faults.append(
                f'the stock {head_name} calls loss_cls once per FPN level, '
                'so each level would be ranked alone (and its test-time '
                "scores would not be the ranked ones); use "
                "type='RaMBORetinaHead' or 'RaMBOATSSHead' "
                '(RankLossDenseHeadMixin), which rank all levels and images '
                'together, or for FCOS RaMBOFCOSHead')
    elif getattr(loss, 'custom_cls_channels', False):
        expected = loss.get_cls_channels(head.num_classes)
        attr, actual = classifier_of(head)
        if attr and actual != expected:
            faults.append(
                f'the loss asks for {expected} class channels '
                f'(get_cls_channels({head.num_classes})), but the head '
                f'built {attr} with {actual}: {head_name} ignores '
                'custom_cls_channels. Use a head that honours it (e.g. '
                'Shared2FCBBoxHead) or a loss setting that needs '
                f'{actual} channels')
    return faults


def _located(where: str, head: nn.Module, fault: str) -> str:
    return f'{where} ({type(head.loss_cls).__name__} in ' \
        f'{type(head).__name__}): {fault}'


def _is_checked_head(module: Any) -> bool:
    loss = getattr(module, 'loss_cls', None)
    return isinstance(module, nn.Module) and isinstance(loss, nn.Module) \
        and hasattr(module, 'num_classes') and _ours(loss)


def head_fit_faults(model: nn.Module) -> List[str]:
    """Misfits of every head's ``loss_cls`` in a built model.

    Args:
        model (nn.Module): A detector, a head, or any container of heads.

    Returns:
        list[str]: ``'<module path>.loss_cls (<loss> in <head>): ...'`` per
        misfit; empty when every loss of this package fits its head.
    """
    faults = []
    for name, head in model.named_modules():
        if _is_checked_head(head):
            where = f'{name}.loss_cls' if name else 'loss_cls'
            faults += [_located(where, head, fault)
                       for fault in _head_faults(head)]
    return faults


# ------------------------------------------------------------ build-time
_building = threading.local()


def _type_of(cfg: Any) -> Optional[str]:
    kind = cfg.get('type') if isinstance(cfg, dict) else None
    return kind if isinstance(kind, str) else getattr(kind, '__name__', None)


def _field(parent: Any, child: Any) -> str:
    """The key of ``parent`` (a config dict) that holds ``child``'s config:
    the same object, or else the only value of the child's type."""
    matches = []
    if not isinstance(parent, dict):  # e.g. a list built as nn.Sequential
        return f'<{_type_of(child)}>'
    for key, value in parent.items():
        items = enumerate(value) if isinstance(value, (list, tuple)) else \
            [(None, value)]
        for index, item in items:
            name = key if index is None else f'{key}[{index}]'
            if item is child:
                return name
            if isinstance(item, dict) and _type_of(item) == _type_of(child):
                matches.append(name)
    return matches[0] if len(matches) == 1 else f'<{_type_of(child)}>'


def _config_path(stack: List[Any], cfg: Any) -> str:
    """``model.roi_head.bbox_head`` for the head being built inside the
    model whose configs are on ``stack`` (outermost first)."""
    chain = stack + [cfg]
    fields = [_field(parent, child) for parent, child in zip(chain, chain[1:])]
    return '.'.join(['model'] + fields) if stack else ''


def _fail(stack: List[Any], cfg: Any, module: nn.Module,
          faults: List[str]) -> HeadFitError:
    path = _config_path(stack, cfg)
    field = f'{path}.loss_cls' if path else \
        f'loss_cls of {_type_of(cfg)}'
    value = cfg.get('loss_cls') if isinstance(cfg, dict) else None
    value = value.to_dict() if hasattr(value, 'to_dict') else value
    return HeadFitError(
        f'{field}={value!r} does not fit its head '
        f'{type(module).__name__}: ' + '; '.join(faults),
        [_located(field, module, fault) for fault in faults])


def checked_build_func(build_func):
    """``build_func`` that raises :class:`HeadFitError` for a built head
    whose ``loss_cls`` (one of ours) does not fit it. A head is built by
    its parent's build call, so the check runs as soon as the head is
    complete, and the error names the config field
    (``model.roi_head.bbox_head.loss_cls`` when built inside a model). The
    wrapper is marked ``head_fit_checked``; ``__wrapped__`` is
    ``build_func``."""

    def build(cfg, *args, **kwargs):
        stack = getattr(_building, 'stack', None)
        if stack is None:
            stack = _building.stack = []
        stack.append(cfg)
        try:
            module = build_func(cfg, *args, **kwargs)
        finally:
            stack.pop()
        if _is_checked_head(module):
            faults = _head_faults(module)
            if faults:
                raise _fail(stack, cfg, module, faults)
        return module

    build.head_fit_checked = True
    build.__wrapped__ = build_func
    return build

