"""``torch.compile`` of the RaMBO losses: the recipe of docs/losses.md,
``torch.compile(loss, fullgraph=True, dynamic=True)``, gives the eager
values and gradients (within 1e-6) and traces a fixed set of graphs: one
for the first call, which sizes the score memory, and one for every later
call, whether the memory is filling or full and whatever the number of
items up to the largest seen (recompiles counted by Dynamo's
``unique_graphs``). The default backend is inductor (C++ on the CPU; the
slow tests); ``eager`` checks Dynamo's guards alone, ``aot_eager`` the
same graphs through AOT autograd. None runs on CUDA, where MMDetection's
focal loss (the dense half of ``MixedRankLoss``) is an mmcv kernel.
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
# ones, then fewer items
CASES = {
    'ap-softmax-memory-0': (lambda: RaMBOAPLoss(
        memory=0, score_space='softmax'), detection_batch, [64, 64, 48]),
    'ap-softmax-memory-2': (lambda: RaMBOAPLoss(
        memory=2, score_space='softmax', log_diagnostics=True),
                            detection_batch,
                            [64] * 3 + [48] * 2),
    'ap-softmax-memory-7': (lambda: RaMBOAPLoss(
        memory=7, score_space='softmax'), detection_batch,
                            [64] * 9 + [48] * 2),
    'ap-sigmoid-dense-memory-7': (lambda: RaMBOAPLoss(
        memory=7, score_space='sigmoid', margin=0.0), detection_batch,
                                  [200] * 9 + [150] * 2),
    'recall-memory-3': (lambda: RaMBORecallLoss(
        memory=3, log_diagnostics=True), recall_batch, [32] * 5 + [24] * 2),
}


def outputs(module, inputs):
    """The module's outputs (a dict) and its inputs' gradient."""
    x = inputs[0].clone().requires_grad_(True)
    out = module(x, *inputs[1:])
    out = out if isinstance(out, dict) else dict(loss=out)
    sum(v for k, v in out.items() if k.startswith('loss')).backward()
    return {k: v.detach() for k, v in out.items()}, x.grad


def assert_compiles_once_and_equals_eager(case, **options):
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
        if traced.memory:  # written in place, never replaced by an output
            buffers = [t.data_ptr() for t in traced._memory._flat]
            assert kept in (None, buffers)
            kept = buffers
    # the first call sizes the memory: a second graph, and no other
    first = 1 if traced.memory else 0
    assert graphs == [1] * first + [1 + first] * (len(sizes) - first), graphs


def test_graphs_fixed_as_the_memory_fills_and_n_changes():
    """Dynamo alone (``backend='eager'``): the guards, with the
    diagnostics (the device assertions' messages are static: one with a
    symbolic shape would break the graph at the second N)."""
    assert_compiles_once_and_equals_eager('ap-softmax-memory-2',
                                          backend='eager')


@pytest.mark.slow
def test_aot_autograd_traces_the_same_graphs():
    assert_compiles_once_and_equals_eager('ap-softmax-memory-7',
                                          backend='aot_eager')


@pytest.mark.slow
@pytest.mark.parametrize('case', [c for c in CASES if c[-2:] != '-2'])
def test_inductor_compiles_once_and_equals_eager(case):
    assert_compiles_once_and_equals_eager(case)
