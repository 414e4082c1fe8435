"""The 'Orthogonal' initialiser (AUC recipe's embedding layer) in init_cfg."""
import pytest
import torch
import torch.nn as nn
from mmengine.model import initialize
from mmengine.registry import WEIGHT_INITIALIZERS, init_default_scope

from mmdet.registry import MODELS
from mmdet_rankloss.models import OrthogonalInit, orthogonal_init

init_default_scope('mmdet')


def gram_error(weight, gain=1.0):
    """max |W W^T - gain^2 I| (rows) or |W^T W - gain^2 I| (columns)."""
    w = weight.detach().double().flatten(1)
    gram = w @ w.t() if w.shape[0] <= w.shape[1] else w.t() @ w
    eye = torch.eye(len(gram), dtype=gram.dtype)
    return (gram - gain**2 * eye).abs().max()


def tiny_model(init_cfg, **kwargs):
    cfg = dict(
        type='RetrievalModel',
        backbone=dict(
            type='ResNet',
            depth=18,
            base_channels=8,
            out_indices=(3, ),
            init_cfg=None),
        in_channels=64,
        embed_dim=16,
        loss=dict(type='AUCLoss'),
        init_cfg=init_cfg)
    cfg.update(kwargs)
    return MODELS.build(cfg)


def test_registered_in_mmengine():
    assert WEIGHT_INITIALIZERS.get('Orthogonal') is OrthogonalInit


def test_embedding_rows_orthonormal_by_name_others_untouched():
    torch.manual_seed(0)
    model = tiny_model(
        dict(type='Orthogonal', gain=2, bias=0.5,
             override=dict(name='embedding')),
        hidden_dims=(32, ))
    emb, hidden = model.embedding, model.hidden[0]
    assert gram_error(emb.weight, 2.0) > 0.5  # PyTorch's default is not
    hidden_before = [p.detach().clone() for p in hidden.parameters()]
    model.init_weights()
    assert emb.weight.shape == (16, 32)
    assert gram_error(emb.weight, 2.0) < 1e-5  # W W^T = 4 I
    assert torch.equal(emb.bias, torch.full((16, ), 0.5))
    for before, after in zip(hidden_before, hidden.parameters()):
        assert torch.equal(before, after)  # an unnamed Linear: untouched
    assert gram_error(hidden.weight) > 0.5


def test_paper_shape_512_by_2048_and_tall_matrices():
    torch.manual_seed(0)
    layer = nn.Linear(2048, 512)
    initialize(layer, dict(type='Orthogonal', layer='Linear'))
    assert gram_error(layer.weight) < 1e-4  # rows orthonormal
    assert torch.count_nonzero(layer.bias) == 0
    tall = nn.Linear(8, 32)
    orthogonal_init(tall, gain=0.5, bias=-1)
    assert gram_error(tall.weight, 0.5) < 1e-5  # columns orthonormal
    assert torch.equal(tall.bias, torch.full((32, ), -1.0))


def test_layer_type_selects_every_linear_and_no_conv():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.Linear(6, 5), nn.ReLU(),
                          nn.Linear(5, 3, bias=False))
    conv_before = model[0].weight.detach().clone()
    initialize(model, dict(type='Orthogonal', layer='Linear', bias=0.1))
    assert gram_error(model[1].weight) < 1e-5
    assert gram_error(model[3].weight) < 1e-5
    assert torch.allclose(model[1].bias, torch.full((5, ), 0.1))
    assert torch.equal(model[0].weight, conv_before)


def test_errors():
    for gain in (0, -1.0, float('nan'), True, '1'):
        with pytest.raises(ValueError, match='gain'):
            OrthogonalInit(gain=gain)
    with pytest.raises(ValueError, match='2 dimensions'):
        initialize(
            nn.Sequential(nn.BatchNorm1d(4)),
            dict(type='Orthogonal', layer='BatchNorm1d'))
