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


def test_buffers_are_preallocated_padded_and_updated_in_place():
    """One shape whatever the fill and N (up to the capacity); the first
    slots of a filling memory and the rows past a smaller batch are
    padding (``fill``; targets False or the integer minimum); the buffers
    are the same tensors after every append (a CUDA graph replays them)."""
    memory = ScoreMemory(3, fill=float('-inf'))
    memory.append(torch.ones(4, 2), torch.ones(4, 2, dtype=torch.bool))
    buffers = [t.data_ptr() for t in memory.read(torch.zeros(1, 2))]
    state = {key: id(value) for key, value in vars(memory).items()}
    memory.append(torch.full((2, 2), 2.), torch.ones(2, 2, dtype=torch.bool))
    values, targets = memory.read(torch.zeros(1, 2))
    assert [t.data_ptr() for t in (values, targets)] == buffers
    # nothing but the buffers' contents changes (what a replay repeats)
    assert {key: id(value) for key, value in vars(memory).items()} == state
    assert values.shape == (12, 2) and len(memory) == 2
    pad = float('-inf')
    expect = [pad] * 4 + [1.] * 4 + [2.] * 2 + [pad] * 2
    assert torch.equal(values[:, 0], torch.tensor(expect))
    assert torch.equal(targets[:, 0], values[:, 0] > pad)
    labels = ScoreMemory(2)
    labels.append(torch.ones(3, 2), torch.tensor([4, 5, 6]))
    labels.append(torch.ones(2, 2), torch.tensor([7, 8]))
    stored = labels.read(torch.zeros(1, 2))[1]
    assert stored.tolist()[3:5] == [7, 8]
    assert labels.is_padding(stored).tolist() == [False] * 5 + [True]
    # a larger batch enlarges the buffers once, keeping what is stored
    labels.append(torch.ones(4, 2), torch.arange(4))
    assert [v.shape[0] for v, _ in labels] == [4, 4]
    assert labels[0][1].tolist()[:3] == [7, 8, torch.iinfo(torch.long).min]


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
    assert len(state['values']) == 2
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
    with pytest.raises(ValueError, match='"targets"'):
        restored.load_state_dict(dict(values=[torch.ones(2, 6)],
                                      targets=[[0, 1]]))


def test_states_of_unpadded_entries_load_padded():
    """A state of the earlier layout (one unpadded tensor per batch, any
    lengths) reads as the same rows, oldest first, with padding."""
    memory = ScoreMemory(3, fill=float('-inf'))
    memory.load_state_dict(dict(
        size=3, values=[torch.ones(2, 2), torch.full((3, 2), 2.)],
        targets=[torch.ones(2, 2, dtype=torch.bool),
                 torch.zeros(3, 2, dtype=torch.bool)]))
    values, targets = memory.read(torch.zeros(1, 2))
    ranked = values[:, 0] > float('-inf')
    assert torch.equal(values[ranked, 0], torch.tensor([1., 1., 2., 2., 2.]))
    assert targets[:, 0].tolist() == [False] * 3 + [True] * 2 + [False] * 4
    assert len(memory) == 2


@pytest.mark.parametrize(
    'device', ['meta'] + (['cuda'] if torch.cuda.is_available() else []))
def test_loaded_state_moves_to_the_batch_device(device):
    memory = ScoreMemory(2)
    memory.load_state_dict(dict(values=[torch.ones(2, 3)],
                                targets=[torch.zeros(2)]))
    values, targets = memory.read(torch.zeros(1, 3, device=device))
    assert values.device.type == targets.device.type == device
    assert values.shape == (4, 3)
    # a CPU batch again: the other device's entries go, the batch stays
    memory.append(torch.full((1, 3), 2.), torch.zeros(1))
    assert len(memory) == 1
    values, _ = memory.read(torch.zeros(1, 3))
    assert torch.equal(values, torch.tensor([[0.] * 3, [2.] * 3]))


def test_loaded_state_moves_on_append_before_any_read():
    memory = ScoreMemory(2)
    memory.load_state_dict(dict(values=[torch.ones(2, 3)],
                                targets=[torch.zeros(2)]))
    memory.append(torch.zeros(1, 3, device='meta'),
                  torch.zeros(1, device='meta'))
    values, targets = memory.read(torch.zeros(1, 3, device='meta'))
    assert values.device.type == targets.device.type == 'meta'
    assert values.shape == (4, 3)


def test_device_change_without_load_resets():
    memory = ScoreMemory(2)
    memory.append(torch.zeros(2, 3, device='meta'), torch.zeros(2))
    assert memory.read(torch.zeros(1, 3)) is None


def test_reserved_buffers_exist_before_the_first_batch_and_stay():
    """Reserved: all padding before any append, the same tensors after
    appends and a reset (in place); a larger batch enlarges them."""
    memory = ScoreMemory(2, fill=float('-inf'))
    memory.reserve(4, ((3, ), (3, )), (torch.float32, torch.bool))
    values, targets = memory.read(torch.zeros(1, 3))
    assert values.shape == targets.shape == (8, 3) and len(memory) == 0
    assert bool((values == float('-inf')).all()) and not bool(targets.any())
    buffers = [t.data_ptr() for t in memory._flat]
    memory.append(torch.ones(3, 3), torch.ones(3, 3, dtype=torch.bool))
    memory.append(torch.ones(4, 3), torch.ones(4, 3, dtype=torch.bool))
    assert [t.data_ptr() for t in memory._flat] == buffers
    assert int(memory.read(torch.zeros(1, 3))[1][:, 0].sum()) == 7
    memory.reset()
    assert [t.data_ptr() for t in memory._flat] == buffers
    values, targets = memory.read(torch.zeros(1, 3))
    assert len(memory) == 0 and bool((values == float('-inf')).all())
    assert not bool(targets.any())
    memory.append(torch.ones(5, 3), torch.ones(5, 3, dtype=torch.bool))
    assert memory.read(torch.zeros(1, 3))[0].shape == (10, 3)
    labels = ScoreMemory(2)
    labels.reserve(3, ((2, ), ()), (torch.float32, torch.long))
    assert bool(labels.is_padding(labels.read(torch.zeros(1, 2))[1]).all())


@pytest.mark.parametrize('cls, shape, like', [
    (RaMBOAPLoss, (6, 4), torch.zeros(1, 4)),
    (RaMBORecallLoss, (6, 5), torch.zeros(1, 5))], ids=['ap', 'recall'])
def test_memory_shape_reserves_and_the_memory_follows_the_module(
        cls, shape, like):
    loss = cls(memory=3, memory_shape=shape)
    values, targets = loss._memory.read(like)
    assert values.shape == (18, shape[1])
    assert targets.shape == ((18, shape[1]) if cls is RaMBOAPLoss else
                             (18, ))
    moved = []
    loss._memory.to = moved.append  # where a module move takes it
    loss.to(torch.device('cpu'))
    loss._apply(lambda t: t.to('meta'))  # meta keeps nothing: it goes
    assert moved == [torch.device('cpu')] and loss._memory._flat is None
    # no reservation with memory 0; bad shapes are refused
    assert cls(memory=0, memory_shape=shape)._memory.read(like) is None
    for bad in ((6, ), (0, 4), (6, 4.5), 6):
        with pytest.raises(ValueError, match='memory_shape'):
            cls(memory=3, memory_shape=bad)


def test_to_moves_the_stored_batches_and_meta_ones_become_padding():
    memory = ScoreMemory(2, fill=float('-inf'))
    memory.reserve(2, ((3, ), ()), (torch.float32, torch.long), 'meta')
    memory.to('cpu')
    values, labels = memory.read(torch.zeros(1, 3))
    assert bool((values == float('-inf')).all())
    assert bool(memory.is_padding(labels).all())
    memory.append(torch.ones(2, 3), torch.arange(2))
    memory.to(torch.device('cpu'))
    assert torch.equal(memory[0][1], torch.arange(2))
