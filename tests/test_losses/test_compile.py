"""``torch.compile`` of the RaMBO losses: the recipe of docs/losses.md,
``torch.compile(loss, fullgraph=True, dynamic=True)``, gives the eager
values and gradients (within 1e-6) and traces one graph from the first
call on when the score memory is allocated at construction
(``memory_shape``), whether the memory is empty, filling or full and
whatever the number of items up to the reserved rows (recompiles counted
by Dynamo's ``unique_graphs``). A memory sized by the first call instead
costs one more graph, a batch larger than reserved two (its own call's and
the next's). The default backend is inductor (C++ on the CPU; the slow
tests); ``eager`` checks Dynamo's guards alone, ``aot_eager`` the same
graphs through AOT autograd. On CUDA alone, a training call captured in
a CUDA graph replays the eager steps. MMDetection's focal loss (the dense
half of ``MixedRankLoss``) is an mmcv kernel on CUDA, not compiled here.
"""
import pytest
import torch
import torch.nn.functional as F
from torch._dynamo.utils import counters

from mmdet_rankloss.losses import RaMBOAPLoss, RaMBORecallLoss
from tests.conftest import make_rpn_batch


def detection_batch(space, num_rois, seed):
    """Scores, labels and RoI weights (some 0) of a detection head."""
    cls_score, labels = make_rpn_batch(num_rois, 5, space=space, seed=seed)
    weight = (torch.rand(num_rois, generator=torch.Generator().manual_seed(
        seed)) > 0.1).float()
    return cls_score.detach(), labels, weight


def recall_batch(space, batch_size, seed):
    gen = torch.Generator().manual_seed(seed)
    emb = F.normalize(torch.randn(batch_size, 8, generator=gen), dim=1)
    return emb, torch.randint(0, 4, (batch_size, ), generator=gen)


# (module, batch, items of the calls): the memory fills over the first
# ones (reserved for them: memory_shape), then fewer items
CASES = {
    'ap-softmax-memory-0': (lambda: RaMBOAPLoss(
        memory=0, score_space='softmax'), detection_batch, [64, 64, 48]),
    'ap-softmax-memory-2': (lambda: RaMBOAPLoss(
        memory=2, score_space='softmax', log_diagnostics=True,
        memory_shape=(64, 5)), detection_batch, [64] * 3 + [48] * 2),
    'ap-softmax-memory-7': (lambda: RaMBOAPLoss(
        memory=7, score_space='softmax', memory_shape=(64, 5)),
                            detection_batch, [64] * 9 + [48] * 2),
    'ap-sigmoid-dense-memory-7': (lambda: RaMBOAPLoss(
        memory=7, score_space='sigmoid', margin=0.0, memory_shape=(
            200, 5)), detection_batch, [200] * 9 + [150] * 2),
    'recall-memory-3': (lambda: RaMBORecallLoss(
        memory=3, log_diagnostics=True, memory_shape=(32, 8)),
                        recall_batch, [32] * 5 + [24] * 2),
}


def outputs(module, inputs):
    """The module's outputs (a dict) and its inputs' gradient."""
    x = inputs[0].clone().requires_grad_(True)
    out = module(x, *inputs[1:])
    out = out if isinstance(out, dict) else dict(loss=out)
    sum(v for k, v in out.items() if k.startswith('loss')).backward()
    return {k: v.detach() for k, v in out.items()}, x.grad


def assert_compiles_once_and_equals_eager(case, graphs_at=None, **options):
    """The compiled module equals the eager one at every call and has
    traced ``graphs_at[i]`` graphs after call i (all 1 by default)."""
    make, batch, sizes = CASES[case]
    space = 'sigmoid' if 'sigmoid' in case else 'softmax'
    eager, traced = make().train(), make().train()
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(traced, fullgraph=True, dynamic=True, **options)
    graphs, kept = [], None
    for step, n in enumerate(sizes):
        inputs = batch(space, n, step)
        want, want_grad = outputs(eager, inputs)
        got, grad = outputs(compiled, inputs)
        assert got.keys() == want.keys()
        for key, value in want.items():
            torch.testing.assert_close(got[key], value, rtol=1e-6, atol=0,
                                       msg=f'{key} at call {step}')
        # relative to the largest entry (inductor's matmul sums in its
        # own order: entries near 0 differ by ~1e-9 in the recall loss)
        torch.testing.assert_close(grad, want_grad, rtol=1e-6,
                                   atol=1e-6 * float(want_grad.abs().max()))
        graphs.append(counters['stats']['unique_graphs'])
        if traced.memory and graphs_at is None:
            # allocated before the first call, written in place, never
            # replaced by an output
            buffers = [t.data_ptr() for t in traced._memory._flat]
            assert kept in (None, buffers)
            kept = buffers
    assert graphs == (graphs_at or [1] * len(sizes)), graphs


def test_graphs_fixed_as_the_memory_fills_and_n_changes():
    """Dynamo alone (``backend='eager'``): the guards, with the
    diagnostics (the device assertions' messages are static: one with a
    symbolic shape would break the graph at the second N)."""
    assert_compiles_once_and_equals_eager('ap-softmax-memory-2',
                                          backend='eager')


@pytest.mark.slow
@pytest.mark.parametrize('shape, sizes, graphs_at', [
    (None, [64] * 3 + [48], [1, 2, 2, 2]),
    ((48, 5), [48, 64, 64, 48, 56], [1, 2, 3, 3, 3]),
], ids=['sized-by-the-first-call', 'grown-past-the-reservation'])
def test_an_unreserved_or_outgrown_memory_traces_again(
        monkeypatch, shape, sizes, graphs_at):
    """Without ``memory_shape`` the first call allocates the memory (one
    more graph, at the second call); a batch larger than reserved enlarges
    it (a graph for that call and one for the calls after it); none after
    that, and eager values throughout (as documented)."""
    monkeypatch.setitem(CASES, 'ap-softmax-memory-2', (lambda: RaMBOAPLoss(
        memory=2, score_space='softmax', memory_shape=shape),
                                                      detection_batch, sizes))
    assert_compiles_once_and_equals_eager('ap-softmax-memory-2', graphs_at,
                                          backend='eager')


@pytest.mark.slow
def test_aot_autograd_traces_the_same_graphs():
    assert_compiles_once_and_equals_eager('ap-softmax-memory-7',
                                          backend='aot_eager')


@pytest.mark.slow
@pytest.mark.parametrize('case', [c for c in CASES if c[-2:] != '-2'])
def test_inductor_compiles_once_and_equals_eager(case):
    assert_compiles_once_and_equals_eager(case)


def test_a_resumed_reserved_memory_traces_one_graph():
    """A state loaded into the reserved buffers (as on resume) is read
    by the one graph: no relocation at the first call, eager values."""
    make, batch, sizes = CASES['ap-softmax-memory-2']
    saved = make().train()
    for step in range(3):
        outputs(saved, batch('softmax', 64, step))
    eager, traced = make().train(), make().train()
    for module in (eager, traced):
        module.load_memory_state_dict(saved.memory_state_dict())
    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(traced, fullgraph=True, dynamic=True,
                             backend='eager')
    for step, n in enumerate([64, 48, 64], start=3):
        inputs = batch('softmax', n, step)
        (want, _), (got, _) = outputs(eager, inputs), outputs(
            compiled, inputs)
        for key, value in want.items():
            torch.testing.assert_close(got[key], value, rtol=1e-6, atol=0)
        assert counters['stats']['unique_graphs'] == 1


@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason='a CUDA graph needs a GPU')
@pytest.mark.parametrize('case', [
    'ap-softmax-memory-7', 'ap-sigmoid-dense-memory-7', 'recall-memory-3'])
def test_a_cuda_graph_replays_the_eager_steps(case):
    """One training call (forward and backward) captured in a CUDA graph
    after warm-up calls on a side stream, then replayed on new batches
    while the memory fills and is full: each replay's loss and gradient
    equal those of an eager module given the same batches. A read from
    the device during capture would raise."""
    make, batch, sizes = CASES[case]
    space = 'sigmoid' if 'sigmoid' in case else 'softmax'
    device = torch.device('cuda')
    eager, graphed = make().train().to(device), make().train().to(device)
    batches = [[t.to(device) for t in batch(space, sizes[0], step)]
               for step in range(len(sizes) + 2)]
    static = [t.clone() for t in batches[0]]
    x = static[0].requires_grad_(True)

    def step():
        out = graphed(x, *static[1:])
        out = out if isinstance(out, dict) else dict(loss=out)
        loss = sum(v for k, v in out.items() if k.startswith('loss'))
        loss.backward()
        return loss.detach()

    def feed(inputs):
        with torch.no_grad():
            for kept, new in zip(static, inputs):
                kept.copy_(new)

    warm = 3
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for inputs in batches[:warm]:
            feed(inputs)
            x.grad = None
            step()
            outputs(eager, inputs)
    torch.cuda.current_stream().wait_stream(side)
    x.grad = None
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        loss = step()
    for i, inputs in enumerate(batches[warm:], start=warm):
        feed(inputs)
        graph.replay()
        want, want_grad = outputs(eager, inputs)
        torch.testing.assert_close(loss, sum(
            v for k, v in want.items() if k.startswith('loss')), rtol=1e-6,
                                   atol=0, msg=f'loss at call {i}')
        torch.testing.assert_close(x.grad, want_grad, rtol=1e-6,
                                   atol=1e-6 * float(want_grad.abs().max()))
