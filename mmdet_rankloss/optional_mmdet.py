"""Whether MMDetection is there: the one place that decides.

The losses, ops and networks import torch (and numpy) only; their registries
and MMEngine helpers come from here: with MMDetection (``HAS_MMDET``) its
``MODELS``, ``HOOKS`` and MMEngine's ``Hook``, ``print_log``,
``is_model_wrapper``, ``get_dist_info``, ``all_reduce`` and the runner's
iteration; without it plain-PyTorch stand-ins (:class:`LocalRegistry` builds
the package's modules by name, ``torch.distributed``, the ``logging`` logger
``mmdet_rankloss``, no iteration). An installed MMDetection that cannot be
imported is a warning naming the cause (docs/architecture.md)."""
import logging
import warnings
from typing import Optional

import torch.distributed as dist
from torch import nn

from .ops.distributed import get_dist_info_safe

__all__ = [
    'HAS_MMDET', 'INSTALL_HINT', 'MODELS', 'HOOKS', 'LocalRegistry',
    'require_mmdet', 'Hook', 'print_log', 'is_model_wrapper',
    'get_dist_info', 'all_reduce', 'runner_iter'
]

#: how to get the MMDetection stack, for messages
INSTALL_HINT = ("install the extra: pip install '.[mmdet]' from a checkout, "
                'plus mmcv with compiled ops (tools/install.sh installs all '
                'of it; docs/get_started.md)')


def _import_mmdet_registry():
    """``mmdet.registry``, or None when MMDetection cannot be imported."""
    try:
        from mmdet import registry
    except ModuleNotFoundError as error:
        if (error.name or '').split('.')[0] not in ('mmdet', 'mmcv',
                                                    'mmengine'):
            raise
        if error.name != 'mmdet':  # installed, but a part of it is missing
            warnings.warn(
                f'mmdet_rankloss: MMDetection is installed but cannot be '
                f'imported ({error}); the losses work as plain PyTorch '
                f'modules, nothing is registered in MMDetection; to use '
                f'them in MMDetection, {INSTALL_HINT}',
                stacklevel=3)
        return None
    return registry


_mmdet_registry = _import_mmdet_registry()
#: True when MMDetection (with MMEngine and mmcv) is importable
HAS_MMDET = _mmdet_registry is not None


class LocalRegistry:
    """The package's own modules by name, for use without MMDetection.

    The subset of MMEngine's ``Registry`` that the losses use:
    ``register_module()`` as a class decorator and ``build(cfg)``.

    Args:
        name (str): What the registry holds, for messages (``'model'``).
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._module_dict = {}

    def __contains__(self, key: str) -> bool:
        return key in self._module_dict

    def get(self, key: str) -> Optional[type]:
        """The class registered as ``key``, None if there is none."""
        return self._module_dict.get(key)

    def register_module(self, name: Optional[str] = None,
                        force: bool = False, module: Optional[type] = None):
        """Registers a class under ``name`` (default: its ``__name__``);
        returns the decorator, or the class when ``module`` is given."""

        def register(cls: type) -> type:
            key = name or cls.__name__
            if key in self._module_dict and not force:
                raise KeyError(f'{key} is already registered in the '
                               f'{self.name} registry of mmdet_rankloss')
            self._module_dict[key] = cls
            return cls

        return register if module is None else register(module)

    def build(self, cfg: dict):
        """``cfg['type'](**rest)``; ``type`` is a registered name or a class.

        Raises:
            TypeError: If ``cfg`` is not a dict with a ``type``.
            KeyError: If the name is not registered (MMDetection's own
                modules, e.g. ``CrossEntropyLoss``, are not without it).
        """
        if not isinstance(cfg, dict) or 'type' not in cfg:
            raise TypeError(f'{self.name} registry of mmdet_rankloss: cfg '
                            f'must be a dict with a type, got {cfg!r}')
        args = dict(cfg)
        kind = args.pop('type')
        if isinstance(kind, type):
            return kind(**args)
        if kind not in self._module_dict:
            raise KeyError(
                f'{self.name} registry of mmdet_rankloss: type {kind!r} is '
                f'not one of its modules {sorted(self._module_dict)}; '
                'MMDetection is not installed, for its modules '
                f'{INSTALL_HINT}')
        return self._module_dict[kind](**args)


def require_mmdet(owner: str) -> None:
    """Raises ImportError naming ``owner`` when MMDetection is not there."""
    if not HAS_MMDET:
        raise ImportError(f'{owner} needs MMDetection, which cannot be '
                          f'imported; {INSTALL_HINT}')


def _torch_all_reduce(data, op: str = 'sum') -> None:
    """``torch.distributed.all_reduce`` in place with MMEngine's signature
    (``op='sum'`` only); nothing without a process group of several."""
    if op != 'sum':
        raise ValueError(f"all_reduce: op must be 'sum', got {op!r}")
    if get_dist_info_safe()[1] > 1:
        dist.all_reduce(data, op=dist.ReduceOp.SUM)


def _torch_is_model_wrapper(model: nn.Module) -> bool:
    """Whether ``model`` is a torch data-parallel wrapper (``.module``)."""
    return isinstance(model, (nn.DataParallel,
                              nn.parallel.DistributedDataParallel))


def _logging_print_log(msg: str, logger=None,
                       level: int = logging.INFO) -> None:
    """MMEngine's ``print_log`` signature, to the ``mmdet_rankloss``
    logger of ``logging`` (``logger`` is MMEngine's and ignored)."""
    logging.getLogger('mmdet_rankloss').log(level, msg)


if HAS_MMDET:
    from mmengine.dist import all_reduce, get_dist_info
    from mmengine.hooks import Hook
    from mmengine.logging import MessageHub, print_log
    from mmengine.model import is_model_wrapper

    MODELS = _mmdet_registry.MODELS
    HOOKS = _mmdet_registry.HOOKS

    def runner_iter() -> Optional[int]:
        """The iteration of the running MMEngine runner, None outside one."""
        return MessageHub.get_current_instance().get_info('iter')
else:
    all_reduce = _torch_all_reduce
    get_dist_info = get_dist_info_safe
    Hook = object  # the hooks' base; without MMEngine nothing calls them
    print_log = _logging_print_log
    is_model_wrapper = _torch_is_model_wrapper
    MODELS = LocalRegistry('model')
    HOOKS = LocalRegistry('hook')

    def runner_iter() -> Optional[int]:
        """None: without MMEngine there is no runner."""
        return None
