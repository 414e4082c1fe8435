"""The retrieval model: modes, loss interface, norm_eval, embedding lr."""
import pytest
import torch
import torch.nn as nn
from mmengine.optim import build_optim_wrapper
from mmengine.registry import init_default_scope
from mmengine.structures import BaseDataElement

from mmdet.registry import MODELS
from mmdet_rankloss.models import RetrievalModel

init_default_scope('mmdet')


@MODELS.register_module(force=True)
class _TensorLossForTest(nn.Module):
    """A loss returning a plain tensor (the other allowed return type)."""

    def forward(self, embeddings, labels):
        same = labels[:, None] == labels[None, :]
        return -(embeddings @ embeddings.t())[same].mean()


def tiny_cfg(**kwargs):
    cfg = dict(
        type='RetrievalModel',
        data_preprocessor=dict(
            type='ImgDataPreprocessor',
            mean=[127.5, 127.5, 127.5],
            std=[127.5, 127.5, 127.5]),
        backbone=dict(
            type='ResNet',
            depth=18,
            base_channels=8,
            out_indices=(3, ),
            norm_eval=False,
            init_cfg=None),
        in_channels=64,
        embed_dim=16,
        loss=dict(type='RaMBORecallLoss', lambda_val=4.0,
                  log_diagnostics=True))
    cfg.update(kwargs)
    return cfg


def batch(n=8, size=32, classes=4):
    torch.manual_seed(0)
    inputs = [
        torch.randint(0, 256, (3, size, size), dtype=torch.uint8)
        for _ in range(n)
    ]
    samples = []
    for i in range(n):
        sample = BaseDataElement(metainfo=dict(sample_idx=i))
        sample.gt_label = torch.tensor(i % classes)
        samples.append(sample)
    return dict(inputs=inputs, data_samples=samples)


@pytest.mark.parametrize('pooling', ['avg', 'max'])
def test_modes(pooling):
    model = MODELS.build(tiny_cfg(pooling=pooling))
    assert isinstance(model, RetrievalModel)
    data = model.data_preprocessor(batch(), training=True)
    losses = model(**data, mode='loss')
    assert 'loss_rambo_recall' in losses
    assert 'rambo_grad_density' in losses  # logged diagnostics pass through
    losses['loss_rambo_recall'].backward()
    assert model.embedding.weight.grad is not None
    assert model.backbone.conv1.weight.grad is not None
    emb = model(data['inputs'], mode='tensor')
    assert emb.shape == (8, 16)
    assert torch.allclose(emb.norm(dim=1), torch.ones(8), atol=1e-5)
    model.eval()
    with torch.no_grad():
        out = model(**data, mode='predict')
    assert len(out) == 8 and out[0].pred_embedding.shape == (16, )
    assert out[3].sample_idx == 3
    with pytest.raises(ValueError, match='mode'):
        model(data['inputs'], mode='features')


def test_tensor_loss_and_train_step():
    model = MODELS.build(tiny_cfg(loss=dict(type='_TensorLossForTest')))
    wrapper = build_optim_wrapper(
        model, dict(optimizer=dict(type='Adam', lr=1e-3)))
    log_vars = model.train_step(batch(), wrapper)
    assert set(log_vars) == {'loss', 'loss_metric'}
    assert torch.isfinite(log_vars['loss'])


def test_embedding_lr_mult_and_norm_eval():
    cfg = tiny_cfg()
    cfg['backbone'].update(norm_eval=True)
    model = MODELS.build(cfg)
    model.train()
    bns = [m for m in model.backbone.modules()
           if isinstance(m, nn.BatchNorm2d)]
    assert bns and not any(m.training for m in bns)  # frozen statistics
    wrapper = build_optim_wrapper(
        model,
        dict(
            optimizer=dict(type='Adam', lr=1e-5, weight_decay=4e-4),
            paramwise_cfg=dict(custom_keys={'embedding': dict(lr_mult=10)})))
    embedding_params = {id(p) for p in model.embedding.parameters()}
    for group in wrapper.optimizer.param_groups:
        is_embedding = id(group['params'][0]) in embedding_params
        assert group['lr'] == pytest.approx(1e-4 if is_embedding else 1e-5)
    assert sum(id(g['params'][0]) in embedding_params
               for g in wrapper.optimizer.param_groups) == 2


def test_errors():
    with pytest.raises(ValueError, match='pooling'):
        MODELS.build(tiny_cfg(pooling='gem'))
    with pytest.raises(ValueError, match='embed_dim'):
        MODELS.build(tiny_cfg(embed_dim=0))
    model = MODELS.build(tiny_cfg(in_channels=32))
    data = model.data_preprocessor(batch(), training=True)
    with pytest.raises(ValueError, match='in_channels=32'):
        model(data['inputs'], mode='tensor')
    model = MODELS.build(tiny_cfg())
    with pytest.raises(ValueError, match='data sample'):
        model(data['inputs'], None, mode='loss')


def test_hidden_layers_for_the_srt_recipe():
    """SRT's recipe puts a 1024-d layer before the 128-d embedding."""
    model = MODELS.build(tiny_cfg(hidden_dims=(24, ), embed_dim=6))
    assert [m.out_features for m in model.hidden
            if isinstance(m, torch.nn.Linear)] == [24]
    emb = model(model.data_preprocessor(batch())['inputs'], mode='tensor')
    assert emb.shape == (8, 6)
    torch.testing.assert_close(emb.norm(dim=1), torch.ones(8))
    with pytest.raises(ValueError, match='hidden_dims'):
        MODELS.build(tiny_cfg(hidden_dims=(0, )))


def test_global_ranking_is_identity_in_one_process():
    """Without a process group the gathered batch is the local batch, so
    the option changes nothing (the 2-process case is in test_ops)."""
    torch.manual_seed(0)
    plain = MODELS.build(tiny_cfg())
    torch.manual_seed(0)
    gathered = MODELS.build(tiny_cfg(global_ranking=True))
    data = plain.data_preprocessor(batch())
    a = plain(**data, mode='loss')
    b = gathered(**data, mode='loss')
    for key in a:
        torch.testing.assert_close(a[key], b[key])
