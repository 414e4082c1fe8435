"""Every change this package can make to MMEngine's and MMDetection's
behaviour, each one named and opt-in.

``import mmdet_rankloss`` applies only ``config_scope`` (``_base_ =
'mmdet_rankloss::...'``); ``checkpoint_loader`` (torch >= 2.6 loads of MMEngine
checkpoints), ``head_fit_check`` (a misfit ``loss_cls`` fails the build) and
``atomic_checkpoints`` are applied by ``tools/train.py`` / ``tools/test.py``,
:func:`enable` / :func:`enable_all`, or a config's ``custom_imports`` of
``'mmdet_rankloss.apply_patches'``. Each is an idempotent ``apply_<name>`` /
``restore_<name>`` pair; ``restore_*`` puts back MMEngine's own object. What
and why: docs/architecture.md, "Changes to MMEngine (patches)"."""
import functools
import importlib
import os
from collections import OrderedDict
from typing import Callable, Dict, List, NamedTuple, Optional

import torch

__all__ = [
    'PATCHES', 'enable', 'disable', 'enabled', 'enable_all', 'disable_all',
    'apply_config_scope', 'restore_config_scope', 'apply_checkpoint_loader',
    'restore_checkpoint_loader', 'apply_head_fit_check',
    'restore_head_fit_check', 'apply_atomic_checkpoints',
    'restore_atomic_checkpoints'
]

PACKAGE = 'mmdet_rankloss'
# Marks a function object installed by this module.
_MARK = '_mmdet_rankloss_patch'


def _ours(func) -> bool:
    return bool(getattr(func, _MARK, False))


# ---------------------------------------------------------------- config_scope
# MMEngine resolves ``package::path`` for the names in MODULE2PACKAGE only;
# a module no distribution is named after sends it to ``find_spec``, the
# imported package's directory (docs/architecture.md: why).
_CONFIG_TARGET = f'{PACKAGE}.registry'


def _module2package() -> dict:
    from mmengine.config.utils import MODULE2PACKAGE
    return MODULE2PACKAGE


def apply_config_scope() -> None:
    """Lets configs inherit ``_base_ = 'mmdet_rankloss::<dir>/<file>.py'``
    (the configs shipped in ``mmdet_rankloss/.mim/configs``)."""
    _module2package().setdefault(PACKAGE, _CONFIG_TARGET)


def restore_config_scope() -> None:
    """Removes the entry; MMEngine refuses ``mmdet_rankloss::`` again."""
    table = _module2package()
    if table.get(PACKAGE) == _CONFIG_TARGET:
        del table[PACKAGE]


def _config_scope_applied() -> bool:
    return _module2package().get(PACKAGE) == _CONFIG_TARGET


# ----------------------------------------------------------- checkpoint_loader
def _checkpoint_loader_class():
    from mmengine.runner.checkpoint import CheckpointLoader
    return CheckpointLoader


def apply_checkpoint_loader() -> None:
    """Wraps MMEngine's local checkpoint loader in
    ``torch.serialization.safe_globals(checkpoint_globals())`` with faults
    named (:mod:`mmdet_rankloss.utils.checkpoint`); other ``torch.load`` calls
    are unchanged. A no-op on torch < 2.5."""
    if not hasattr(torch.serialization, 'safe_globals'):
        return
    from .utils.checkpoint import checkpoint_globals, load_checked
    loader = _checkpoint_loader_class()
    original = loader._schemes['']
    if _ours(original):
        return

    @functools.wraps(original)
    def load_from_local(filename, map_location):
        with torch.serialization.safe_globals(checkpoint_globals()):
            return load_checked(original, filename, map_location)

    setattr(load_from_local, _MARK, True)
    loader.register_scheme(prefixes='', loader=load_from_local, force=True)


def restore_checkpoint_loader() -> None:
    """Registers MMEngine's own local loader again."""
    loader = _checkpoint_loader_class()
    current = loader._schemes.get('')
    while _ours(current):
        current = current.__wrapped__
    if current is not loader._schemes.get(''):
        loader.register_scheme(prefixes='', loader=current, force=True)


def _checkpoint_loader_applied() -> bool:
    return _ours(_checkpoint_loader_class()._schemes.get(''))


# -------------------------------------------------------------- head_fit_check
def _model_registries() -> List:
    """MMEngine's root ``MODELS`` and every registry below it (MMDetection's,
    this package's scope, other plugins' scopes), at this moment."""
    from mmengine.registry import MODELS

    import mmdet.registry  # noqa: F401  (creates MMDetection's children)
    found, todo = [], [MODELS]
    while todo:
        registry = todo.pop()
        found.append(registry)
        todo += list(registry._children.values())
    return found


def _head_checked(func) -> bool:
    return bool(getattr(func, 'head_fit_checked', False))


def apply_head_fit_check() -> None:
    """Makes ``MODELS.build`` (every registry of the tree now; later children
    inherit) refuse a head whose ``loss_cls`` of this package it cannot serve,
    naming the field, its value and the fix
    (:mod:`mmdet_rankloss.models.head_checks`)."""
    from .models.head_checks import checked_build_func
    for registry in _model_registries():
        if not _head_checked(registry.build_func):
            registry.build_func = checked_build_func(registry.build_func)


def restore_head_fit_check() -> None:
    """Puts back each registry's own ``build_func``."""
    for registry in _model_registries():
        while _head_checked(registry.build_func):
            registry.build_func = registry.build_func.__wrapped__


def _head_fit_check_applied() -> bool:
    return _head_checked(_model_registries()[0].build_func)


# ---------------------------------------------------------- atomic_checkpoints
# The names through which MMEngine 0.10.7 writes checkpoints (Runner,
# CheckpointHook, the FlexibleRunner strategies).
_SAVE_MODULES = ('mmengine.runner.checkpoint', 'mmengine.runner.runner',
                 'mmengine.runner')


def _is_local(filename: str, file_client_args: Optional[dict],
              backend_args: Optional[dict]) -> bool:
    from mmengine.fileio import get_file_backend
    from mmengine.fileio.backends import LocalBackend
    if file_client_args is not None or filename.startswith('pavi://'):
        return False
    return isinstance(
        get_file_backend(filename, backend_args=backend_args), LocalBackend)


def _atomic(original: Callable) -> Callable:

    @functools.wraps(original)
    def save_checkpoint(checkpoint,
                        filename,
                        file_client_args=None,
                        backend_args=None):
        filename = str(filename)
        if not _is_local(filename, file_client_args, backend_args):
            return original(
                checkpoint,
                filename,
                file_client_args=file_client_args,
                backend_args=backend_args)
        tmp = f'{filename}.tmp-{os.getpid()}'
        # MMEngine's own writer (creates the folder), to the temporary file
        original(checkpoint, tmp, backend_args=backend_args)
        with open(tmp, 'rb+') as f:
            os.fsync(f.fileno())
        os.replace(tmp, filename)

    setattr(save_checkpoint, _MARK, True)
    return save_checkpoint


def _save_modules() -> List:
    return [importlib.import_module(name) for name in _SAVE_MODULES]


def apply_atomic_checkpoints() -> None:
    """Makes MMEngine write local checkpoints to ``<path>.tmp-<pid>``, flushed
    and renamed over ``<path>``: a killed job leaves the previous checkpoint,
    no truncated file. Remote saves and ``file_client_args`` are unchanged."""
    modules = _save_modules()
    current = modules[0].save_checkpoint
    original = current.__wrapped__ if _ours(current) else current
    wrapper = current if _ours(current) else _atomic(original)
    for module in modules:
        if module.save_checkpoint is original:
            module.save_checkpoint = wrapper


def restore_atomic_checkpoints() -> None:
    """Puts back MMEngine's own ``save_checkpoint`` under each name."""
    for module in _save_modules():
        while _ours(module.save_checkpoint):
            module.save_checkpoint = module.save_checkpoint.__wrapped__


def _atomic_checkpoints_applied() -> bool:
    return all(_ours(m.save_checkpoint) for m in _save_modules())


# ----------------------------------------------------------------- the table
class Patch(NamedTuple):
    apply: Callable[[], None]
    restore: Callable[[], None]
    applied: Callable[[], bool]


PATCHES: Dict[str, Patch] = OrderedDict(
    config_scope=Patch(apply_config_scope, restore_config_scope,
                       _config_scope_applied),
    checkpoint_loader=Patch(apply_checkpoint_loader,
                            restore_checkpoint_loader,
                            _checkpoint_loader_applied),
    head_fit_check=Patch(apply_head_fit_check, restore_head_fit_check,
                         _head_fit_check_applied),
    atomic_checkpoints=Patch(apply_atomic_checkpoints,
                             restore_atomic_checkpoints,
                             _atomic_checkpoints_applied),
)

def _patch(name: str) -> Patch:
    if name not in PATCHES:
        raise KeyError(f'mmdet_rankloss.patches: no patch {name!r}; the '
                       f'patches are {list(PATCHES)}')
    return PATCHES[name]


def enable(name: str) -> None:
    """Applies the patch ``name`` (a key of :data:`PATCHES`)."""
    _patch(name).apply()


def disable(name: str) -> None:
    """Restores what the patch ``name`` changed to MMEngine's own."""
    _patch(name).restore()


def enabled(name: str) -> bool:
    """Whether the patch ``name`` is in place now. ``checkpoint_loader``
    stays off on torch < 2.5, where it has nothing to do."""
    return _patch(name).applied()


def enable_all() -> None:
    """Applies every patch (what ``tools/train.py`` / ``tools/test.py``
    do)."""
    for name in PATCHES:
        enable(name)


def disable_all() -> None:
    """Restores everything; MMEngine is as without this package (the
    package's modules stay registered)."""
    for name in reversed(PATCHES):
        disable(name)
