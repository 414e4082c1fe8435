"""Classifier logits in fp32 under mixed precision, for the RaMBO AP loss.

RaMBO's gradient is piecewise constant in the scores: fp16 logits turn
near-ties into ties and change its direction (cosine 0.65 on 512 x 21 normal
logits), and from-scratch training with RaMBO alone diverged under ``--amp``
(docs/reliability.md#mixed-precision). :class:`RankLogitsFp32Hook` runs the
classification layer of every head whose ``loss_cls`` ranks with RaMBO in fp32;
only its ``forward`` is rebound (same class, parameters and state-dict keys;
bitwise unchanged without autocast)."""
import types
from typing import List, Sequence

import torch
import torch.nn as nn
from mmengine.hooks import Hook
from mmengine.logging import print_log

from mmdet.registry import HOOKS
from ..models.head_checks import classifier_of
from .hooks import unwrap_model

__all__ = ['RankLogitsFp32Hook', 'run_in_weight_dtype']


def _forward_in_weight_dtype(self, x: torch.Tensor) -> torch.Tensor:
    """The layer's own ``forward`` outside autocast, on the input cast to
    the weight's dtype (fp32 master weights under AMP)."""
    with torch.autocast(x.device.type, enabled=False):
        return type(self).forward(self, x.to(self.weight.dtype))


def run_in_weight_dtype(layer: nn.Module) -> None:
    """Rebinds ``layer.forward`` to run outside autocast in the dtype of its
    weights. Idempotent; ``copy.deepcopy`` (e.g. an EMA model) rebinds the
    copy's ``forward`` to the copy."""
    if getattr(layer, 'weight', None) is None:
        raise TypeError(f'{type(layer).__name__} has no weight: only a '
                        'Linear or Conv layer can be run in its weight dtype')
    layer.forward = types.MethodType(_forward_in_weight_dtype, layer)


def _rambo_loss(loss: nn.Module, names: Sequence[str]) -> bool:
    return any(
        type(module).__name__ in names
        for module in (loss, getattr(loss, 'rank_loss', None)))


@HOOKS.register_module()
class RankLogitsFp32Hook(Hook):
    """Computes the logits that a RaMBO loss ranks in fp32 under autocast.

    Before the run, finds every head with a ``loss_cls`` of one of
    ``losses`` (also as the ``rank_loss`` of a ``MixedRankLoss``) and runs
    its classification layer (the ``*_cls`` ``Linear`` / ``Conv2d``, e.g.
    ``fc_cls`` of a ``Shared2FCBBoxHead``) through
    :func:`run_in_weight_dtype`. Put it in ``custom_hooks``; the RaMBO
    recipes ``configs/_base_/rambo.py`` and ``rambo-bce.py`` do.

    Args:
        losses (Sequence[str]): Loss types whose scores stay in fp32.
            Default: ``('RaMBOAPLoss',)``.
    """

    priority = 'VERY_HIGH'

    def __init__(self, losses: Sequence[str] = ('RaMBOAPLoss', )) -> None:
        self.losses = tuple(losses)
        self.layers: List[str] = []

    def before_run(self, runner) -> None:
        model = unwrap_model(runner.model)
        self.layers = []
        for name, head in model.named_modules():
            loss = getattr(head, 'loss_cls', None)
            if not isinstance(loss, nn.Module) or not _rambo_loss(
                    loss, self.losses):
                continue
            attr, _ = classifier_of(head)
            if not attr:
                raise TypeError(
                    f'RankLogitsFp32Hook: {name} ({type(head).__name__}) '
                    f'has a {type(loss).__name__} but no *_cls Linear or '
                    'Conv2d layer to run in fp32')
            run_in_weight_dtype(getattr(head, attr))
            self.layers.append(f'{name}.{attr}' if name else attr)
        if not self.layers:
            raise ValueError(
                'RankLogitsFp32Hook: no head in the model has a loss_cls of '
                f'{self.losses}; remove the hook from custom_hooks or name '
                'the loss types it should serve (losses=...)')
        print_log(
            'RankLogitsFp32Hook: fp32 logits under autocast for '
            + ', '.join(self.layers), logger='current')
