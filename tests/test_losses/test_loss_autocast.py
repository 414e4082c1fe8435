"""Every registered loss under CUDA autocast (fp16), emulated on CPU.

No GPU runs here. :func:`_device_modes.cuda_autocast` applies CUDA
autocast's op lists (PyTorch AMP docs) to CPU tensors, so the loss runs as
it would inside ``torch.autocast('cuda', dtype=torch.float16)`` (the
emulation's limits are in its module docstring). For each loss of
:mod:`test_loss_contract` (the same registry walk and inputs), the input is
what a head gives under autocast (fp16) and the reference is the same
values in fp32 without autocast. Asserted: a finite value within
``VALUE_ATOL`` of the reference, finite gradients in the input's dtype,
and a gradient whose cosine with the reference's is at least ``MIN_COSINE``
(``MIN_COSINE_NETWORK`` for the losses through a sorter network, whose
LSTM/linear layers really run in fp16 under autocast).
"""
import pytest
import torch
import torch.nn.functional as F

from _device_modes import cuda_autocast
from mmdet.registry import MODELS
from mmdet_rankloss.losses.pairwise import retrieval_pairs
from test_loss_contract import inputs  # noqa: F401 (the fixture)
from test_loss_contract import REGISTERED, build, kind_of, run, total

pytestmark = pytest.mark.usefixtures('one_torch_thread')

#: Largest difference of the loss value from fp32 (the half-precision
#: contract test allows 0.05; measured here: at most VALUE_ATOL / 10).
VALUE_ATOL = 1e-3
#: Smallest cosine of the gradient with fp32's (measured: 1.0 to 6 digits
#: for every loss that ranks in fp32).
MIN_COSINE = 0.9999
#: For the losses whose sorter network runs in fp16 under autocast.
MIN_COSINE_NETWORK = 0.99
NETWORK_LOSSES = {'SoDeepAPLoss', 'SoDeepRecallLoss', 'SoDeepSpearmanLoss',
                  'SorterRanker'}
#: Random chunks: value and gradient differ between any two calls.
RANDOM = {'SorterRanker'}
#: ``torch.amp.GradScaler``'s first scale: past fp16's largest finite value
#: (65504), so a loss term left in fp16 gets an infinite gradient.
GRAD_SCALE = 2.0**16


def _cosine(a, b):
    a, b = a.double().flatten(), b.double().flatten()
    if not a.any() and not b.any():
        return 1.0
    return float(F.cosine_similarity(a, b, dim=0))


@pytest.mark.parametrize('name', REGISTERED)
def test_forward_and_backward_under_emulated_cuda_autocast(name, inputs):
    x16, rest = inputs(name, dtype=torch.float16)
    torch.manual_seed(0)
    with cuda_autocast() as emulation:
        value, out = run(build(name), x16, rest)
    assert emulation.seen, 'no op of the autocast lists was called'
    assert all(torch.isfinite(v).all() for v in out.values())
    assert x16.grad is not None and x16.grad.dtype == torch.float16
    assert torch.isfinite(x16.grad).all(), \
        f'{int((~torch.isfinite(x16.grad)).sum())} non-finite gradients'
    x32 = x16.detach().float().requires_grad_(True)
    torch.manual_seed(0)
    ref, _ = run(build(name), x32, rest)
    if name in RANDOM:
        return
    assert abs(value.item() - ref.item()) <= VALUE_ATOL
    minimum = MIN_COSINE_NETWORK if name in NETWORK_LOSSES else MIN_COSINE
    assert _cosine(x16.grad, x32.grad) >= minimum


@pytest.mark.parametrize('name', REGISTERED)
@pytest.mark.parametrize('case', ['plain', 'empty', 'no_positives'])
def test_gradients_survive_a_grad_scalers_first_step(name, case, inputs):
    """A GradScaler backpropagates the summed loss times 2**16 into the fp16
    head output: every gradient stays finite and, unscaled, points where
    the unscaled step's does (a zero term kept in fp16 once made them all
    NaN: inf * 0)."""
    grads = []
    for scale in (GRAD_SCALE, 1.0):
        x16, rest = inputs(name, case, dtype=torch.float16)
        torch.manual_seed(0)
        with cuda_autocast():
            value, _ = total(build(name)(x16, *rest))
        assert value.dtype != torch.float16
        if not value.requires_grad:
            return
        (value * scale).backward()
        assert torch.isfinite(x16.grad).all(), \
            f'{int((~torch.isfinite(x16.grad)).sum())} non-finite gradients'
        grads.append(x16.grad.double() / scale)
    if name not in RANDOM:
        assert _cosine(*grads) >= MIN_COSINE


def test_every_kind_is_covered():
    kinds = {kind_of(MODELS.get(name)) for name in REGISTERED}
    assert kinds == {'detection', 'embedding', 'ranker', 'pairs'}


@pytest.mark.parametrize('name', ['BatchHardTripletLoss',
                                  'SoftRankThresholdLoss'])
def test_distance_losses_at_batch_64_have_finite_gradients(name, batch):
    """The report: batch 64, D = 128, every gradient entry NaN when the
    score product ran in fp16 (self-similarity 1.0, sqrt'(0) * 0)."""
    x, y = batch(64, 16, d=128, dtype=torch.float32, seed=3)
    x = x.half().requires_grad_(True)
    with cuda_autocast():
        loss = build(name)(x, y)
        loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(x.grad).all()


def test_scores_are_fp32_and_exact_under_autocast(batch):
    """RaMBORecallLoss ranked fp16 products (2.8 % of neighbours tied at
    batch 512): the scores are now the fp32 product, bit for bit."""
    x, y = batch(512, 128, d=64, dtype=torch.float32, seed=4)
    x = x.half()
    ref = retrieval_pairs(x.float(), y).scores
    with cuda_autocast():
        scores = retrieval_pairs(x, y).scores
    assert scores.dtype == torch.float32
    assert torch.equal(scores, ref)


@pytest.mark.parametrize('name', ['RankSortLoss', 'ErrorDrivenAPLoss',
                                  'ALRPLoss'])
def test_error_driven_float32_core_leaves_autocast(name, inputs):
    """``precision='float32'``: the core's matrix products (the ``P x P``
    relations of RS and aLRP) are fp32 products, which CUDA autocast would
    run in fp16; they run with autocast off, so value and update are bit
    for bit those without autocast (AP-Loss has no matrix product: its
    prefix sums are integer ``cumsum``)."""
    x, rest = inputs(name)
    ref, ref_out = run(build(name, precision='float32'), x, rest)
    ref_grad, x.grad = x.grad, None
    with cuda_autocast() as emulation:
        value, out = run(build(name, precision='float32'), x, rest)
    if name != 'ErrorDrivenAPLoss':
        assert emulation.seen['matmul'], 'no matrix product was seen'
    assert torch.equal(value, ref)
    assert all(torch.equal(out[k], ref_out[k]) for k in ref_out)
    assert torch.equal(x.grad, ref_grad)
