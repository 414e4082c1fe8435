"""optional_mmdet: MMDetection's registries here, stand-ins without it.

This environment has MMDetection, so the module holds MMDetection's own
registries and MMEngine's helpers; the stand-ins it would hold without
MMDetection are tested directly. The whole package without MMDetection:
``tests/test_packaging/test_plain_pytorch.py``.
"""
import builtins
import logging
from unittest import mock

import pytest
import torch
import torch.distributed as dist
from torch import nn

from mmdet_rankloss import optional_mmdet as om


def test_with_mmdetection_the_registries_are_mmdetections():
    from mmdet import registry
    from mmengine.dist import all_reduce
    from mmengine.hooks import Hook
    assert om.HAS_MMDET
    assert om.MODELS is registry.MODELS and om.HOOKS is registry.HOOKS
    assert om.Hook is Hook and om.all_reduce is all_reduce
    assert om.MODELS.get('RaMBOAPLoss').__module__ == \
        'mmdet_rankloss.losses.ap_loss'
    om.require_mmdet('Anything')  # no error


def _importing_mmdet_fails_with(missing):
    """``from mmdet import registry`` raising ModuleNotFoundError for
    ``missing`` (sys.modules and the real mmdet are left alone)."""
    real = builtins.__import__

    def fake(name, *args, **kwargs):
        if name == 'mmdet':
            raise ModuleNotFoundError(f'No module named {missing!r}',
                                      name=missing)
        return real(name, *args, **kwargs)

    return mock.patch.object(builtins, '__import__', fake)


def test_mmdetection_not_installed_is_no_error(recwarn):
    with _importing_mmdet_fails_with('mmdet'):
        assert om._import_mmdet_registry() is None
    assert not [w for w in recwarn if 'mmdet_rankloss' in str(w.message)]


def test_mmdetection_without_mmcv_is_a_warning_naming_the_cause():
    with _importing_mmdet_fails_with('mmcv'), \
            pytest.warns(UserWarning, match=r"No module named 'mmcv'.*"
                         r"pip install '\.\[mmdet\]'"):
        assert om._import_mmdet_registry() is None


def test_another_missing_module_is_raised():
    with _importing_mmdet_fails_with('shapely'), \
            pytest.raises(ModuleNotFoundError, match='shapely'):
        om._import_mmdet_registry()


def test_require_mmdet_names_the_owner_and_the_install():
    with mock.patch.object(om, 'HAS_MMDET', False), pytest.raises(
            ImportError,
            match=r"^MixedRankLoss needs MMDetection.*pip install '\.\["):
        om.require_mmdet('MixedRankLoss')


class Thing(nn.Module):

    def __init__(self, size=1):
        super().__init__()
        self.size = size


def test_local_registry_registers_and_builds():
    registry = om.LocalRegistry('model')
    assert registry.register_module()(Thing) is Thing
    assert 'Thing' in registry and registry.get('Thing') is Thing
    assert registry.get('Other') is None
    built = registry.build(dict(type='Thing', size=3))
    assert isinstance(built, Thing) and built.size == 3
    assert registry.build(dict(type=Thing)).size == 1  # a class as type
    registry.register_module(name='Alias', module=Thing)
    assert registry.get('Alias') is Thing


def test_local_registry_refuses_by_name():
    registry = om.LocalRegistry('model')
    registry.register_module()(Thing)
    with pytest.raises(KeyError, match='Thing is already registered'):
        registry.register_module()(Thing)
    registry.register_module(force=True)(Thing)
    with pytest.raises(KeyError, match=r"type 'CrossEntropyLoss' is not one "
                       r"of its modules \['Thing'\].*pip install"):
        registry.build(dict(type='CrossEntropyLoss'))
    for cfg in (None, dict(size=1), 'Thing'):
        with pytest.raises(TypeError, match='must be a dict with a type'):
            registry.build(cfg)


def test_torch_all_reduce_sums_only_across_several_processes():
    x = torch.ones(2)
    with mock.patch.object(dist, 'all_reduce') as reduce:
        om._torch_all_reduce(x)  # no process group: nothing to do
        reduce.assert_not_called()
        with mock.patch.object(om, 'get_dist_info_safe',
                               return_value=(0, 2)):
            om._torch_all_reduce(x, op='sum')
        reduce.assert_called_once_with(x, op=dist.ReduceOp.SUM)
    with pytest.raises(ValueError, match="op must be 'sum', got 'mean'"):
        om._torch_all_reduce(x, op='mean')


def test_torch_is_model_wrapper():
    model = nn.Linear(2, 2)
    assert not om._torch_is_model_wrapper(model)
    assert om._torch_is_model_wrapper(nn.DataParallel(model))


def test_logging_print_log(caplog):
    with caplog.at_level(logging.INFO, logger='mmdet_rankloss'):
        om._logging_print_log('hello', logger='current',
                              level=logging.WARNING)
    assert [(r.name, r.levelno, r.message) for r in caplog.records] == [
        ('mmdet_rankloss', logging.WARNING, 'hello')]
