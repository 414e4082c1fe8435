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


class ListMemory:
    """The unpadded memory the buffer replaced: a list of the last
    ``size`` batches, read as their concatenation."""

    def __init__(self, size):
        self.size, self.entries = size, []

    def read(self, like):
        if not self.entries:
            return None
        return tuple(torch.cat(parts) for parts in zip(*self.entries))

    def append(self, values, targets):
        self.entries = (self.entries + [(values.detach(),
                                         targets.detach())])[-self.size:]

    def is_padding(self, targets):
        return torch.zeros_like(targets, dtype=torch.bool)


def _ap_call(module, seed, n):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 5, generator=gen).requires_grad_(True)
    labels = torch.randint(0, 5, (n, ), generator=gen)
    weight = (torch.rand(n, generator=gen) > 0.2).float()
    out = module(x, labels, weight)
    sum(v for k, v in out.items() if k.startswith('loss')).backward()
    return out, x.grad


def _recall_call(module, seed, n):
    gen = torch.Generator().manual_seed(seed)
    x = torch.nn.functional.normalize(torch.randn(n, 6, generator=gen),
                                      dim=1).requires_grad_(True)
    out = module(x, torch.randint(0, 3, (n, ), generator=gen))
    out['loss_rambo_recall'].backward()
    return out, x.grad


@pytest.mark.parametrize('cls, call, settings', [
    (RaMBOAPLoss, _ap_call, dict()),
    (RaMBOAPLoss, _ap_call, dict(normalize_ranks=False)),
    (RaMBOAPLoss, _ap_call, dict(ranker=dict(type='SigmoidRanker'))),
    (RaMBORecallLoss, _recall_call, dict()),
    (RaMBORecallLoss, _recall_call, dict(normalize_ranks=False)),
], ids=['ap', 'ap-integer-ranks', 'ap-sigmoid-ranker', 'recall',
        'recall-integer-ranks'])
def test_padded_memory_equals_the_unpadded_one_bit_for_bit(
        cls, call, settings):
    """Batches of changing size (smaller ones padded, a larger one
    enlarging the buffers) give the gradients of the list of unpadded
    batches bit for bit, and the values within 1e-6: a sum over a row,
    longer with the padding, may add in another order (``rambo_ap``, the
    recall loss's per-query sum: one ulp apart)."""
    module = cls(memory=3, log_diagnostics=True, **settings).train()
    reference = cls(memory=3, log_diagnostics=True, **settings).train()
    reference._memory = ListMemory(3)
    for step, n in enumerate([40, 24, 40, 56, 32, 56]):
        out, grad = call(module, step, n)
        want, want_grad = call(reference, step, n)
        assert out.keys() == want.keys()
        for key, value in want.items():
            torch.testing.assert_close(
                out[key], value, rtol=1e-6, atol=0,
                msg=f'{key} at call {step}')
        assert torch.equal(grad, want_grad), step
