"""Tests of ScoreMemory and the memory API of the losses that own one."""
import io

import pytest
import torch

from mmdet_rankloss.losses import RaMBOAPLoss, RaMBORecallLoss
from mmdet_rankloss.losses.memory import ScoreMemory


def test_append_read_keeps_last_size_batches_detached():
    memory = ScoreMemory(2)
    assert memory.read(torch.zeros(3, 4)) is None
    batches = [(torch.randn(3, 4, requires_grad=True), torch.rand(3, 4) > .5)
               for _ in range(3)]
    for values, targets in batches:
        memory.append(values, targets)
    values, targets = memory.read(torch.zeros(1, 4))
    assert len(memory) == 2 and not values.requires_grad
    torch.testing.assert_close(
        values, torch.cat([batches[1][0], batches[2][0]]).detach())
    assert torch.equal(targets, torch.cat([batches[1][1], batches[2][1]]))
    assert [v.shape for v, _ in memory] == [(3, 4), (3, 4)]


@pytest.mark.parametrize('like', [
    torch.zeros(1, 5), torch.zeros(1, 4, dtype=torch.float64)])
def test_read_resets_on_shape_or_dtype_change(like):
    memory = ScoreMemory(3)
    memory.append(torch.zeros(2, 4), torch.zeros(2))
    assert memory.read(like) is None and len(memory) == 0


def test_size_zero_stores_nothing_and_bad_size_is_refused():
    memory = ScoreMemory(0)
    memory.append(torch.zeros(2, 4), torch.zeros(2))
    assert len(memory) == 0
    for bad in (-1, 1.5, True, '3'):
        with pytest.raises(ValueError, match='memory'):
            ScoreMemory(bad)


def test_state_dict_round_trip_with_weights_only_load():
    memory = ScoreMemory(3)
    for seed in range(2):
        gen = torch.Generator().manual_seed(seed)
        memory.append(torch.randn(4, 6, generator=gen),
                      torch.randint(0, 3, (4, ), generator=gen))
    buffer = io.BytesIO()
    torch.save(memory.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    restored = ScoreMemory(3)
    restored.load_state_dict(state)
    like = torch.zeros(1, 6)
    for a, b in zip(memory.read(like), restored.read(like)):
        assert torch.equal(a, b)
    smaller = ScoreMemory(1)
    smaller.load_state_dict(state)  # keeps the newest entry
    assert torch.equal(smaller[0][0], memory[1][0])
    with pytest.raises(ValueError, match='values'):
        restored.load_state_dict({'values': []})


@pytest.mark.parametrize(
    'device', ['meta'] + (['cuda'] if torch.cuda.is_available() else []))
def test_loaded_state_moves_to_the_batch_device(device):
    memory = ScoreMemory(2)
    memory.load_state_dict(dict(values=[torch.ones(2, 3)],
                                targets=[torch.zeros(2)]))
    values, _ = memory.read(torch.zeros(1, 3, device=device))
    assert values.device.type == device and len(memory) == 1
    # a CPU batch again: the other device's entries go, the batch stays
    memory.append(torch.full((1, 3), 2.), torch.zeros(1))
    assert len(memory) == 1
    values, _ = memory.read(torch.zeros(1, 3))
    assert torch.equal(values, torch.full((1, 3), 2.))


def test_loaded_state_moves_on_append_before_any_read():
    memory = ScoreMemory(2)
    memory.load_state_dict(dict(values=[torch.ones(2, 3)],
                                targets=[torch.zeros(2)]))
    memory.append(torch.zeros(1, 3, device='meta'), torch.zeros(1))
    assert len(memory) == 2
    assert all(v.device.type == 'meta' for v, _ in memory)


def test_device_change_without_load_resets():
    memory = ScoreMemory(2)
    memory.append(torch.zeros(2, 3, device='meta'), torch.zeros(2))
    assert memory.read(torch.zeros(1, 3)) is None


def _ap_batch(seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(32, 4, generator=gen), torch.randint(
        0, 4, (32, ), generator=gen)


def _recall_batch(seed):
    gen = torch.Generator().manual_seed(seed)
    emb = torch.nn.functional.normalize(torch.randn(12, 5, generator=gen),
                                        dim=1)
    return emb, torch.arange(12) % 4


@pytest.mark.parametrize('cls, batch', [(RaMBOAPLoss, _ap_batch),
                                        (RaMBORecallLoss, _recall_batch)])
def test_losses_resume_exactly_from_their_memory_state(cls, batch):
    """A loss rebuilt from memory_state_dict() continues bit for bit."""
    first = cls(memory=2)
    for seed in range(3):
        first(*batch(seed))
    buffer = io.BytesIO()
    torch.save(first.memory_state_dict(), buffer)
    buffer.seek(0)
    second = cls(memory=2)
    second.load_memory_state_dict(torch.load(buffer, weights_only=True))
    a, b, fresh = (out if isinstance(out, dict) else dict(loss=out)
                   for out in (first(*batch(7)), second(*batch(7)),
                               cls(memory=2)(*batch(7))))
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
    assert not all(torch.equal(a[k], fresh[k]) for k in a)
    assert not any('memory' in k for k in first.state_dict())
