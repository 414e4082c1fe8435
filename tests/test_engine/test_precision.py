"""RankLogitsFp32Hook: the logits a RaMBO loss ranks stay fp32 under
autocast, and nothing changes without it."""
import copy
import os.path as osp
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn
from mmengine.config import Config
from mmengine.registry import init_default_scope

import mmdet_rankloss  # noqa: F401
from mmdet.registry import HOOKS, MODELS
from mmdet_rankloss.engine import RankLogitsFp32Hook, run_in_weight_dtype

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEVICES = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])


def _half(device):  # CPU autocast: bf16; CUDA: fp16 as under --amp
    return torch.bfloat16 if device == 'cpu' else torch.float16


@pytest.mark.parametrize('device', DEVICES)
def test_layer_returns_fp32_logits_under_autocast(device):
    torch.manual_seed(0)
    layer = nn.Linear(16, 5).to(device)
    x = torch.randn(8, 16, device=device)
    with torch.autocast(device, dtype=_half(device)):
        assert layer(x).dtype == _half(device)  # what the loss got before
        run_in_weight_dtype(layer)
        out = layer(x)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, nn.functional.linear(
        x, layer.weight, layer.bias))
    out.sum().backward()
    assert layer.weight.grad is not None


def test_without_autocast_nothing_changes():
    torch.manual_seed(0)
    layer = nn.Linear(16, 5)
    x = torch.randn(8, 16, requires_grad=True)
    before = layer(x)
    run_in_weight_dtype(layer)
    run_in_weight_dtype(layer)  # idempotent
    after = layer(x)
    assert torch.equal(before, after)
    conv = nn.Conv2d(3, 4, 3)
    img = torch.randn(1, 3, 8, 8)
    ref = conv(img)
    run_in_weight_dtype(conv)
    assert torch.equal(conv(img), ref)


def test_a_deep_copy_uses_its_own_weights():
    """EMA models are deep copies: their classifier must not read the live
    model's weights."""
    layer = nn.Linear(4, 2)
    run_in_weight_dtype(layer)
    twin = copy.deepcopy(layer)
    with torch.no_grad():
        twin.weight.zero_()
        twin.bias.zero_()
    x = torch.randn(3, 4)
    assert torch.equal(twin(x), torch.zeros(3, 2))
    assert not torch.equal(layer(x), torch.zeros(3, 2))


def test_a_layer_without_weight_is_refused():
    with pytest.raises(TypeError, match='ReLU has no weight'):
        run_in_weight_dtype(nn.ReLU())


def _model(config):
    init_default_scope('mmdet')
    cfg = Config.fromfile(osp.join(ROOT, 'configs', config))
    return MODELS.build(cfg.model)


@pytest.mark.parametrize('config', [
    'quickstart/faster-rcnn_r18-w32_fpn_rambo_toyvoc.py',
    'quickstart/faster-rcnn_r18-w32_fpn_rambo-bce_toyvoc.py'
])
def test_hook_finds_the_roi_classifier_and_keeps_the_keys(config):
    model = _model(config)
    keys = list(model.state_dict())
    hook = HOOKS.build(dict(type='RankLogitsFp32Hook'))
    hook.before_run(SimpleNamespace(model=model))
    assert hook.layers == ['roi_head.bbox_head.fc_cls']
    assert list(model.state_dict()) == keys  # checkpoints load either way
    head = model.roi_head.bbox_head
    x = torch.randn(4, head.fc_cls.in_features)
    with torch.autocast('cpu', dtype=torch.bfloat16):
        assert head.fc_cls(x).dtype == torch.float32
        assert head.fc_reg(x).dtype == torch.bfloat16  # the rest stays


@pytest.mark.parametrize('config, layer', [
    ('dense/atss/atss_r18-w32_fpn_rambo-focal_16e_digitsvoc.py',
     'bbox_head.atss_cls'),
    ('dense/retinanet/retinanet_r18-w32_fpn_rambo-focal_16e_digitsvoc.py',
     'bbox_head.retina_cls'),
])
def test_hook_finds_a_dense_heads_classifier(config, layer):
    model = _model(config)
    hook = RankLogitsFp32Hook()
    hook.before_run(SimpleNamespace(model=model))
    assert hook.layers == [layer]
    conv = model.get_submodule(layer)
    x = torch.randn(1, conv.in_channels, 4, 4)
    with torch.autocast('cpu', dtype=torch.bfloat16):
        assert conv(x).dtype == torch.float32


def test_hook_refuses_a_model_without_a_rambo_head():
    model = _model('quickstart/faster-rcnn_r18-w32_fpn_ce_toyvoc.py')
    with pytest.raises(ValueError, match=r"RaMBOAPLoss.*losses=\.\.\."):
        RankLogitsFp32Hook().before_run(SimpleNamespace(model=model))
