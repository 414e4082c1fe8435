"""FastAP's large-batch heuristic gives the one-pass parameter gradient."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from mmengine.optim import OptimWrapper
from mmengine.registry import init_default_scope
from mmengine.structures import BaseDataElement

from mmdet.registry import MODELS
from mmdet_rankloss.models.large_batch import (LargeBatchRetrievalModel,
                                               chunked_embedding_backward)
from mmdet_rankloss.losses import fastap_loss

init_default_scope('mmdet')


def tiny_net(dropout=0.0):
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(5, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(dropout),
        nn.Linear(16, 8))


def embed_with(net):
    return lambda x: F.normalize(net(x), dim=1)


def grads(net):
    return [p.grad.clone() for p in net.parameters()]


def data(b=20):
    g = torch.Generator().manual_seed(1)
    return torch.randn(b, 5, generator=g), torch.arange(b) % 4


@pytest.mark.parametrize('chunk_size', [1, 6, 20, 64])
def test_equals_one_pass_gradient_with_frozen_batchnorm(chunk_size):
    x, y = data()
    one, chunked = tiny_net().eval(), tiny_net().eval()
    ref = fastap_loss(embed_with(one)(x), y)
    ref.backward()
    loss = chunked_embedding_backward(embed_with(chunked), x,
                                      lambda e: fastap_loss(e, y), chunk_size)
    assert loss.item() == pytest.approx(ref.item(), abs=1e-7)
    for a, b in zip(grads(one), grads(chunked)):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_fp16_chunks_with_a_loss_scaler_keep_the_small_gradients():
    """Chunks embedded in fp16 (what autocast gives) at a large batch: G
    is held in fp32 and taken of the scaled loss, so the parameter
    gradient, unscaled, is the fp32 one to fp16 rounding of the embeddings.
    With G in fp16 (before), most of its entries flushed to zero."""
    b, scale = 1024, 2.0**16
    g = torch.Generator().manual_seed(2)
    x, y = torch.randn(b, 5, generator=g), torch.arange(b) % 64
    one, chunked = tiny_net().eval(), tiny_net().eval()
    fastap_loss(embed_with(one)(x), y).backward()

    def embed_fp16(inputs):
        return embed_with(chunked)(inputs).half()

    seen = []

    def loss_fn(e):
        e.register_hook(seen.append)
        return fastap_loss(e, y)

    chunked_embedding_backward(embed_fp16, x, loss_fn, 256,
                               scale_loss=lambda loss: loss * scale)
    (grad_e, ) = seen
    assert grad_e.dtype == torch.float32 and bool((grad_e != 0).all())
    for a, c in zip(grads(one), grads(chunked)):
        torch.testing.assert_close(c / scale, a, rtol=2e-2,
                                   atol=2e-2 * float(a.abs().max()))


def test_batchnorm_in_training_mode_breaks_the_equality():
    x, y = data()
    one, chunked = tiny_net().train(), tiny_net().train()
    fastap_loss(embed_with(one)(x), y).backward()
    chunked_embedding_backward(embed_with(chunked), x,
                               lambda e: fastap_loss(e, y), 6)
    assert not all(torch.allclose(a, b, atol=1e-4)
                   for a, b in zip(grads(one), grads(chunked)))


def test_dropout_masks_are_replayed_in_the_second_pass():
    x, y = data()
    ref_net, net = tiny_net(0.5), tiny_net(0.5)
    ref_net[1].eval()
    net[1].eval()
    # reference: the same chunks, embedded once with a graph kept
    torch.manual_seed(5)
    emb = torch.cat([embed_with(ref_net)(x[s:s + 6]) for s in (0, 6, 12, 18)])
    fastap_loss(emb, y).backward()
    torch.manual_seed(5)
    chunked_embedding_backward(embed_with(net), x,
                               lambda e: fastap_loss(e, y), 6)
    for a, b in zip(grads(ref_net), grads(net)):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_bad_arguments():
    x, y = data()
    net = embed_with(tiny_net().eval())
    with pytest.raises(ValueError, match='chunk_size'):
        chunked_embedding_backward(net, x, lambda e: fastap_loss(e, y), 0)
    with pytest.raises(ValueError, match='scalar'):
        chunked_embedding_backward(net, x, lambda e: e.sum(1), 4)
    with pytest.raises(ValueError, match='inputs'):
        chunked_embedding_backward(net, x[:0], lambda e: e.sum(), 4)


def model_cfg(norm_eval=True, **kwargs):
    return dict(
        data_preprocessor=dict(
            type='ImgDataPreprocessor', mean=[127.5] * 3, std=[127.5] * 3),
        backbone=dict(type='ResNet', depth=18, base_channels=8,
                      out_indices=(3, ), norm_eval=norm_eval, init_cfg=None),
        in_channels=64, embed_dim=16, loss=dict(type='FastAPLoss'), **kwargs)


def image_batch(n=12, classes=3):
    g = torch.Generator().manual_seed(0)
    samples = []
    for i in range(n):
        sample = BaseDataElement()
        sample.gt_label = torch.tensor(i % classes)
        samples.append(sample)
    inputs = [torch.randint(0, 256, (3, 32, 32), generator=g,
                            dtype=torch.uint8) for _ in range(n)]
    return dict(inputs=inputs, data_samples=samples)


def test_model_train_step_matches_the_one_pass_update():
    torch.manual_seed(0)
    one = MODELS.build(dict(type='RetrievalModel', **model_cfg())).train()
    chunked = MODELS.build(dict(type='LargeBatchRetrievalModel',
                                chunk_size=5, **model_cfg())).train()
    chunked.load_state_dict(one.state_dict())
    before = one.embedding.weight.detach().clone()
    logs = []
    for model in (one, chunked):
        wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.5))
        logs.append(model.train_step(copy.deepcopy(image_batch()), wrapper))
    assert logs[1]['loss'].item() == pytest.approx(logs[0]['loss'].item(),
                                                   abs=1e-6)
    for (name, a), b in zip(one.named_parameters(), chunked.parameters()):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4, msg=name)
    assert not torch.allclose(before, one.embedding.weight)  # it trained


def test_model_warns_about_training_batchnorm_and_validates():
    model = MODELS.build(dict(type='LargeBatchRetrievalModel', chunk_size=4,
                              **model_cfg(norm_eval=False))).train()
    wrapper = OptimWrapper(torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.warns(UserWarning, match='norm_eval'):
        model.train_step(image_batch(8), wrapper)
    with pytest.raises(ValueError, match='chunk_size'):
        LargeBatchRetrievalModel(chunk_size=0, **model_cfg())

