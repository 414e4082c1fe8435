"""The device path of the RaMBO recall loss: exactness and cost.

* Exactness: value, gradient and diagnostics equal those of the previous
  implementation (row selection, ranks through
  :func:`~mmdet_rankloss.ops.ranking.blackbox_rank_loss` and its merge
  re-rank; kept below as :func:`reference_recall`), bit for bit where the
  arithmetic is the same and within 1e-6 relative where only a sum's order
  differs, on random, tied, empty, no-positive, one-positive and memory
  cases; and the CPU path equals the device path run on ``meta``.
* Cost (``_device_modes.ShadowMeta``: the CUDA code path without a GPU):
  at batch 256, D 512 and a full memory of 3, one forward and backward
  launches at most :data:`MAX_OPS` kernels and reads nothing back; the
  count is the same at another batch and memory size.
* Data checks on a device are assertions there (no read); on the CPU a
  ``ValueError``. ``torch.compile(fullgraph=True)`` traces the loss.
"""
import math

import pytest
import torch
import torch.nn.functional as F
from _device_modes import ShadowMeta  # tests/test_losses on sys.path

from mmdet_rankloss.losses import (RaMBORecallLoss as _RaMBORecallLoss,
                                   rambo_recall_loss)
from mmdet_rankloss.losses.pairwise import retrieval_pairs
from mmdet_rankloss.losses.recall_loss import recall_rank_weight
from mmdet_rankloss.losses.utils import zero_loss
from mmdet_rankloss.ops.ranking import blackbox_rank_loss, margin_shift

MAX_OPS = 150


def RaMBORecallLoss(**settings):
    """The module with its diagnostics, which are compared here."""
    return _RaMBORecallLoss(**{'log_diagnostics': True, **settings})


# ------------------------------------------------------------- reference
def grad_stats(grad, positives, valid):
    """The logged push directions as the replaced recall loss computed
    them (boolean indexing), the reference of the masked counts."""
    negatives = valid & ~positives
    stats = dict(rambo_grad_density=(grad[valid] != 0).float().mean())
    if bool(positives.any()):
        stats['rambo_pos_grad_frac'] = (grad[positives] < 0).float().mean()
    if bool(negatives.any()):
        stats['rambo_neg_grad_frac'] = (grad[negatives] > 0).float().mean()
    return stats


def reference_core(scores, positives, valid, lambda_val, margin, weighting,
                   normalize, reduction, with_grad):
    """The previous ``_recall_loss``: rows with a positive selected, ranks
    and Algorithm 1 through ``blackbox_rank_loss`` (its second ranking a
    merge of the moved positives). Returns (loss, rows, beaten, grad)."""
    positives = positives.bool() & valid
    num_pos = positives.sum(-1)
    rows = num_pos > 0
    if not bool(rows.any()):
        return zero_loss(scores), rows, None, None
    shifted = margin_shift(scores[rows], positives[rows], margin)
    shifted = shifted.masked_fill(~valid[rows], float('-inf'))
    pos = positives[rows]
    pos_f = pos.to(shifted.dtype)
    num_pos = num_pos[rows].to(shifted.dtype)
    beaten_rows = []

    def loss_from_ranks(ranks):
        n = ranks.shape[-1]
        int_ranks = ranks * n if normalize else ranks
        order = int_ranks.detach().round().long() - 1
        pos_i = pos.to(torch.int32)
        pos_at = torch.zeros_like(pos_i).scatter_(-1, order, pos_i)
        rank_in_pos = pos_at.cumsum(-1, dtype=torch.int32).gather(
            -1, order).to(int_ranks.dtype)
        beaten = torch.where(pos, int_ranks - rank_in_pos,
                             int_ranks.new_zeros(()))
        beaten_rows.append(beaten.detach())
        per_row = (recall_rank_weight(beaten, weighting) * pos_f).sum(-1)
        per_row = per_row / num_pos
        return per_row.mean() if reduction == 'mean' else per_row.sum()

    out = blackbox_rank_loss(shifted, loss_from_ranks, lambda_val,
                             normalize=normalize, return_grad=with_grad,
                             validate=False)
    loss, grad = out if with_grad else (out, None)
    return loss, rows, beaten_rows[0], grad


def reference_recall(module, embeddings, labels, ref=None, ref_labels=None):
    """The previous ``RaMBORecallLoss.forward`` on given memory items: the
    loss and the diagnostics that were defined (keys left out otherwise)."""
    pairs = retrieval_pairs(embeddings, labels, ref, ref_labels)
    with_grad = module.log_diagnostics and torch.is_grad_enabled() and \
        embeddings.requires_grad
    loss, rows, beaten, grad = reference_core(
        pairs.scores, pairs.positives, pairs.valid, module.lambda_val,
        module.margin, module.weighting, module.normalize_ranks,
        module.reduction, with_grad)
    out = dict(loss_rambo_recall=module.loss_weight * loss)
    if beaten is not None:
        pos = pairs.positives[rows]
        best = beaten.masked_fill(~pos, float('inf')).amin(-1)
        out['rambo_recall_r1'] = (best == 0).float().mean()
    if grad is not None:
        out.update(grad_stats(grad, pairs.positives[rows], pairs.valid[rows]))
    return out


# ---------------------------------------------------------------- cases
def make_batch(case, b=24, d=16, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    emb = F.normalize(torch.randn(b, d, generator=g, dtype=dtype), dim=1)
    labels = torch.randint(0, max(b // 4, 1), (b, ), generator=g)
    if case == 'tied':  # identical embeddings: every score ties
        emb = torch.ones(b, d, dtype=dtype) / math.sqrt(d)
    elif case == 'few_values':  # many ties, not all
        emb = F.normalize(torch.randint(-1, 2, (b, d), generator=g).to(
            dtype) + 0.01, dim=1)
    elif case == 'empty':
        emb, labels = emb[:0], labels[:0]
    elif case == 'no_positive':
        labels = torch.arange(b)
    elif case == 'one_positive':  # one pair shares a class, once per query
        labels = torch.arange(b)
        labels[1] = labels[0]
    elif case == 'some_rows':  # singletons are queries without positives
        labels = torch.arange(b) // 3
        labels[-5:] = torch.arange(100, 105)
    return emb, labels


CASES = ['random', 'tied', 'few_values', 'empty', 'no_positive',
         'one_positive', 'some_rows']
SETTINGS = [
    dict(),
    dict(weighting='loglog', lambda_val=4.0, margin=0.05),
    dict(normalize_ranks=False, lambda_val=1.0),
    dict(reduction='sum', margin=0.0, loss_weight=2.5),
]


def run_module(module, emb, labels, steps=1):
    """Grads and outputs of ``steps`` training calls (later ones with the
    memory), each compared by the caller."""
    results = []
    for step in range(steps):
        x = emb[step].clone().requires_grad_(True)
        out = module(x, labels[step])
        out['loss_rambo_recall'].backward()
        results.append((out, x.grad))
    return results


def assert_same(out, grad, ref_out, ref_grad):
    loss, ref_loss = out['loss_rambo_recall'], ref_out['loss_rambo_recall']
    assert loss.dtype == ref_loss.dtype
    torch.testing.assert_close(loss, ref_loss, rtol=1e-6, atol=1e-12)
    # dL/drk is autograd's arithmetic, the ranks are exact: the gradient is
    # equal bit for bit (only the value's sum over the rows may round
    # differently)
    assert torch.equal(grad, ref_grad), (grad - ref_grad).abs().max()
    for key, value in ref_out.items():
        torch.testing.assert_close(out[key], value, rtol=1e-6, atol=0,
                                   msg=key)
    # a fraction of nothing is now 0 instead of a missing key
    for key in set(out) - set(ref_out):
        assert out[key].item() == 0, key


@pytest.mark.parametrize('case', CASES)
@pytest.mark.parametrize('settings', SETTINGS, ids=str)
def test_equals_the_previous_implementation(case, settings):
    emb, labels = make_batch(case)
    module = RaMBORecallLoss(**settings)
    (out, grad), = run_module(module, [emb], [labels])
    x = emb.clone().requires_grad_(True)
    ref_out = reference_recall(module, x, labels)
    ref_out['loss_rambo_recall'].backward()
    assert set(ref_out) <= set(out)
    assert_same(out, grad, ref_out, x.grad)


@pytest.mark.parametrize('dtype', [torch.float32, torch.float64])
@pytest.mark.parametrize('settings', SETTINGS[:2], ids=str)
def test_equals_the_previous_implementation_with_a_warm_memory(
        dtype, settings):
    """Memory 2, four steps: batch plus 0, 1, 2 and 2 stored batches; one
    batch without any positive in between."""
    batches = [make_batch('random', 32, seed=s, dtype=dtype) for s in
               range(4)]
    batches[2] = make_batch('no_positive', 32, seed=2, dtype=dtype)
    module = RaMBORecallLoss(memory=2, **settings).train()
    stored = []
    for emb, labels in batches:
        ref = torch.cat([e for e, _ in stored]) if stored else None
        ref_labels = torch.cat([t for _, t in stored]) if stored else None
        (out, grad), = run_module(module, [emb], [labels])
        x = emb.clone().requires_grad_(True)
        ref_out = reference_recall(module, x, labels, ref, ref_labels)
        ref_out['loss_rambo_recall'].backward()
        assert_same(out, grad, ref_out, x.grad)
        stored = (stored + [(emb, labels)])[-2:]


def test_equals_the_previous_implementation_on_a_global_batch():
    """With ``global_ranking`` the retrieval model gathers every process's
    batch and calls the loss on all of them: a larger batch whose parts
    come from different processes (here 3 shards of 40, fp32)."""
    shards = [make_batch('random', 40, 32, seed=s, dtype=torch.float32)
              for s in range(3)]
    emb = torch.cat([e for e, _ in shards])
    labels = torch.cat([t for _, t in shards])
    module = RaMBORecallLoss(lambda_val=4.0)
    (out, grad), = run_module(module, [emb], [labels])
    x = emb.clone().requires_grad_(True)
    ref_out = reference_recall(module, x, labels)
    ref_out['loss_rambo_recall'].backward()
    assert_same(out, grad, ref_out, x.grad)


@pytest.mark.parametrize('weighting', ['log', 'loglog'])
@pytest.mark.parametrize('normalize', [True, False])
@pytest.mark.parametrize('reduction', ['mean', 'sum'])
def test_function_equals_the_previous_implementation(weighting, normalize,
                                                     reduction):
    """``rambo_recall_loss`` on a non-square matrix with excluded elements,
    rows without positives and tied scores, fp32."""
    g = torch.Generator().manual_seed(5)
    scores = (torch.randint(-4, 5, (12, 40), generator=g) / 8).float()
    positives = torch.rand(12, 40, generator=g) < 0.2
    valid = torch.rand(12, 40, generator=g) < 0.9
    positives[:3] = False
    kw = dict(lambda_val=0.7, margin=0.125, weighting=weighting,
              normalize_ranks=normalize, reduction=reduction)
    x = scores.clone().requires_grad_(True)
    loss = rambo_recall_loss(x, positives, valid, **kw)
    loss.backward()
    y = scores.clone().requires_grad_(True)
    ref = reference_core(y, positives, valid, kw['lambda_val'], kw['margin'],
                         weighting, normalize, reduction, False)[0]
    ref.backward()
    torch.testing.assert_close(loss, ref, rtol=1e-6, atol=0)
    assert torch.equal(x.grad, y.grad)


# ------------------------------------------------------ CPU against meta
def on_meta(module, batches, **count):
    """Outputs and gradients (CPU values) of training calls on meta, and
    the ShadowMeta of the last call."""
    results = []
    with ShadowMeta() as meta:
        module = meta.module_to_meta(module)
        for emb, labels in batches:
            x = meta.to_meta(emb).requires_grad_(True)
            lab = meta.to_meta(labels)
            meta.reset_counts()
            out = module(x, lab)
            if not isinstance(out, dict):
                out = dict(loss_rambo_recall=out)
            out['loss_rambo_recall'].backward()
            results.append(({k: meta.value(v) for k, v in out.items()},
                            meta.value(x.grad)))
    return results, meta


def assert_cpu_equals_meta(make_module, batches, memory=None):
    """Training calls of a fresh module on the CPU and on meta (memory
    state ``memory`` loaded first, if given): equal outputs and gradients,
    no read on meta."""
    cpu = make_module().train()
    dev = make_module().train()
    if memory is not None:
        cpu.load_memory_state_dict(memory)
        dev.load_memory_state_dict(memory)
    want = [run_module(cpu, [e], [t])[0] for e, t in batches]
    got, meta = on_meta(dev, batches)
    # a memory loaded on the CPU moves to the device once, at its first
    # call (its two buffers and its count): the only copies to it
    moved = 0 if memory is None or len(batches) > 1 else 3
    assert (meta.reads, meta.uploads) == (0, moved), meta.trace
    for (out, grad), (ref_out, ref_grad) in zip(got, want):
        assert out.keys() == ref_out.keys()
        for key, value in ref_out.items():
            assert torch.equal(out[key], value.detach()), key
        assert torch.equal(grad, ref_grad)


@pytest.mark.parametrize('settings', SETTINGS, ids=str)
def test_cpu_path_equals_the_device_path(settings):
    """Ties (the CPU sort's tie fix-up), rows without positives; memory 3
    filled over five steps."""
    batches = [make_batch(c, 48, seed=s, dtype=torch.float32) for s, c in
               enumerate(['random', 'few_values', 'tied', 'some_rows',
                          'random'])]
    assert_cpu_equals_meta(lambda: RaMBORecallLoss(memory=3, **settings),
                           batches)


def test_cpu_path_equals_the_device_path_on_long_rows():
    """Rows of 4120 columns (batch 1030 and a full memory of 3), where the
    CPU sorts with NumPy keys, with ties."""
    stored = [make_batch('few_values', 1030, 8, seed=s, dtype=torch.float32)
              for s in range(4)]
    memory = dict(values=[e for e, _ in stored[:3]],
                  targets=[t for _, t in stored[:3]])
    assert_cpu_equals_meta(lambda: RaMBORecallLoss(memory=3),
                           stored[3:], memory)


# ---------------------------------------------------------------- cost
def count_step(batch, memory, dim=512, steps=None, **settings):
    """ShadowMeta of the last of ``steps`` training calls (default: enough
    to fill the memory)."""
    steps = memory + 1 if steps is None else steps
    g = torch.Generator().manual_seed(0)
    batches = []
    for _ in range(steps):
        emb = F.normalize(torch.randn(batch, dim, generator=g), dim=1)
        batches.append((emb, torch.randint(0, batch // 4, (batch, ),
                                           generator=g)))
    module = RaMBORecallLoss(memory=memory, **settings).train()
    return on_meta(module, batches)[1]


def test_ops_and_host_reads_at_batch_256_memory_3():
    meta = count_step(256, 3)
    assert (meta.reads, meta.uploads) == (0, 0), meta.op_report()
    assert meta.num_ops <= MAX_OPS, meta.op_report()
    assert not meta.no_meta_kernel, meta.no_meta_kernel


def test_op_count_does_not_grow_with_batch_or_memory():
    counts = {(batch, memory): count_step(batch, memory, dim=64).num_ops
              for batch, memory in [(128, 3), (256, 3), (256, 1)]}
    assert len(set(counts.values())) == 1, counts
    # the memory not yet full, and without diagnostics: no read either
    for meta in (count_step(64, 3, steps=2, dim=64),
                 count_step(64, 3, dim=64, log_diagnostics=False)):
        assert meta.total == 0, meta.op_report()


# -------------------------------------------------------------- checks
def test_bad_values_assert_on_the_device_and_raise_on_the_cpu():
    emb, labels = make_batch('random', 16, dtype=torch.float32)
    bad = emb.clone()
    bad[3, 1] = float('nan')
    with pytest.raises(ValueError, match='NaN'):
        RaMBORecallLoss()(bad, labels)
    with ShadowMeta() as meta:
        module = meta.module_to_meta(RaMBORecallLoss())
        x, lab = meta.to_meta(bad), meta.to_meta(labels)
        meta.reset_counts()
        with pytest.raises(RuntimeError, match='RaMBORecallLoss: embeddings'
                           r' \(or the memory\) contain NaN or inf'):
            module(x, lab)
        assert meta.total == 0, meta.trace
        # a NaN stored in the memory (e.g. loaded) is caught as well
        module = meta.module_to_meta(RaMBORecallLoss(memory=1)).train()
        module.load_memory_state_dict(
            dict(values=[meta.to_meta(bad)], targets=[lab]))
        with pytest.raises(RuntimeError, match='NaN'):
            module(meta.to_meta(emb), lab)
        # the function: non-binary masks and NaN scores
        scores = meta.to_meta(torch.randn(3, 5))
        positives = meta.to_meta(torch.tensor([[0, 1, 2, 0, 0]] * 3))
        meta.reset_counts()
        with pytest.raises(RuntimeError, match='positives must be binary'):
            rambo_recall_loss(scores, positives)
        with pytest.raises(RuntimeError, match='scores contain NaN'):
            rambo_recall_loss(scores / 0 * 0, positives.clamp(max=1))
        assert meta.total == 0, meta.trace
    # shapes and dtypes are known on the host: ValueError on any device
    with ShadowMeta():
        with pytest.raises(ValueError, match='integer'):
            RaMBORecallLoss()(emb.to('meta'), labels.float().to('meta'))
        with pytest.raises(ValueError, match='positives'):
            rambo_recall_loss(torch.randn(3, 5, device='meta'),
                              torch.ones(3, 4, device='meta'))


# ------------------------------------------------------------- compile
def test_compiles_to_one_graph():
    """``torch.compile(fullgraph=True)``: inside a trace the device path
    runs on the CPU too (no read, no NumPy sort), so the forward (loss and
    diagnostics, memory 0) is one graph, with the eager CPU path's values
    and gradient (the module with a memory, under inductor:
    test_compile.py)."""
    emb, labels = make_batch('few_values', 32, dtype=torch.float32)
    module = RaMBORecallLoss(lambda_val=4.0)
    compiled = torch.compile(module, fullgraph=True, backend='eager')
    x = emb.clone().requires_grad_(True)
    out = compiled(x, labels)
    out['loss_rambo_recall'].backward()
    y = emb.clone().requires_grad_(True)
    ref = module(y, labels)
    ref['loss_rambo_recall'].backward()
    assert out.keys() == ref.keys()
    for key, value in ref.items():
        torch.testing.assert_close(out[key], value, rtol=1e-6, atol=0,
                                   msg=key)
    assert torch.equal(x.grad, y.grad)
    pairs = retrieval_pairs(emb, labels)
    function = torch.compile(rambo_recall_loss, fullgraph=True,
                             backend='aot_eager')
    x = pairs.scores.clone().requires_grad_(True)
    loss = function(x, pairs.positives, pairs.valid, lambda_val=4.0)
    loss.backward()
    y = pairs.scores.clone().requires_grad_(True)
    ref = rambo_recall_loss(y, pairs.positives, pairs.valid, lambda_val=4.0)
    ref.backward()
    torch.testing.assert_close(loss, ref, rtol=1e-6, atol=0)
    assert torch.equal(x.grad, y.grad)
