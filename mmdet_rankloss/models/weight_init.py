"""Orthogonal weight initialisation for MMEngine's ``init_cfg``.

MMEngine ships Constant, Xavier, Normal, TruncNormal, Uniform, Kaiming,
Caffe2Xavier and Pretrained initialisers, but no orthogonal one. The AUC
loss paper (Gajic et al., section 4.2) reduces the 2048-d ResNet-50
features to 512 "by an orthogonally initialized fully connected layer";
:class:`OrthogonalInit` is registered as ``'Orthogonal'`` in MMEngine's
``WEIGHT_INITIALIZERS``, so a model config writes::

    init_cfg=dict(type='Orthogonal', override=dict(name='embedding'))
"""
import math
from typing import Union

import torch.nn as nn
from mmengine.model.weight_init import BaseInit, update_init_info
from mmengine.registry import WEIGHT_INITIALIZERS

__all__ = ['orthogonal_init', 'OrthogonalInit']


def orthogonal_init(module: nn.Module,
                    gain: float = 1.0,
                    bias: Union[int, float] = 0) -> None:
    """Fill ``module.weight`` with a (semi-)orthogonal matrix, the bias with
    a constant.

    The weight is viewed as a matrix of ``weight.shape[0]`` rows (output
    units) and ``prod(weight.shape[1:])`` columns
    (:func:`torch.nn.init.orthogonal_`): with no more rows than columns
    (a 2048 -> 512 linear layer) the rows are orthonormal up to ``gain``,
    ``W W^T = gain^2 I``; otherwise the columns are, ``W^T W = gain^2 I``.
    A module without a weight is left as it is.

    Args:
        module (nn.Module): A module with ``weight`` (at least 2-D) and
            optionally ``bias``.
        gain (float): Scale of the orthogonal matrix. Defaults to 1.0.
        bias (int | float): Value of the bias. Defaults to 0.
    """
    weight = getattr(module, 'weight', None)
    if weight is not None:
        if weight.dim() < 2:
            raise ValueError(
                f'orthogonal init needs a weight of at least 2 dimensions; '
                f'{type(module).__name__}.weight has shape '
                f'{tuple(weight.shape)}')
        nn.init.orthogonal_(weight, gain=gain)
    if getattr(module, 'bias', None) is not None:
        nn.init.constant_(module.bias, bias)


@WEIGHT_INITIALIZERS.register_module(name='Orthogonal')
class OrthogonalInit(BaseInit):
    """Initialise weights with (semi-)orthogonal matrices (Saxe et al. 2014,
    <https://arxiv.org/abs/1312.6120>; the AUC recipe's embedding layer; see
    :func:`orthogonal_init`), selected like MMEngine's other initialisers: by
    ``layer='Linear'`` or ``override=dict(name='embedding')``.

    Args:
        gain (int | float): Scale of the orthogonal matrix (> 0). Defaults to
            1.
        bias (int | float): Value of the bias. Defaults to 0.
        bias_prob (float, optional): Initialise the bias for this prior
            probability instead (``bias_init_with_prob``). Defaults to None.
        layer (str | list[str], optional): Layer types to initialise. Defaults
            to None.
    """

    def __init__(self, gain: Union[int, float] = 1, **kwargs) -> None:
        super().__init__(**kwargs)
        if isinstance(gain, bool) or not isinstance(gain, (int, float)) or \
                not math.isfinite(gain) or gain <= 0:
            raise ValueError(f'gain must be a finite number > 0, got '
                             f'{gain!r}')
        self.gain = float(gain)

    def __call__(self, module: nn.Module) -> None:

        def init(m: nn.Module) -> None:
            names = {type(m).__name__}
            names.update(base.__name__ for base in type(m).__bases__)
            if self.wholemodule or names & set(self.layer):
                orthogonal_init(m, self.gain, self.bias)

        module.apply(init)
        if hasattr(module, '_params_init_info'):
            update_init_info(module, init_info=self._get_init_info())

    def _get_init_info(self) -> str:
        return f'{type(self).__name__}: gain={self.gain}, bias={self.bias}'
