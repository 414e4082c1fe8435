"""One contract for every registered loss of the package.

The losses are discovered from ``mmdet_rankloss.losses.__all__`` (every
``nn.Module`` there that is registered in ``MODELS``), so a new loss is
checked as soon as it is exported. Each falls into a kind by its base
class, which says how it is called:

* detection (``ClsHooksMixin``): ``loss(cls_score, labels, weight)``;
* embedding (``EmbeddingLoss``): ``loss(embeddings, labels)``;
* ranker (the AP back-ends): ``ranker(scores, positives, margin)``;
* ``SoDeepSpearmanLoss``: ``loss(pred, target)``.

A loss of no known kind fails :func:`test_every_loss_has_a_kind`. Per-loss
files keep only what is specific to a loss (values against references).

One API (``test_one_api_*``): every loss is a function ``<stem>_loss`` and
a module ``<Stem>Loss``, both in ``__all__``, whose shared hyper-parameters
have the same names and defaults; every module returns a scalar Tensor,
and a module with diagnostics gives them on request: built with
``log_diagnostics=True`` it returns a dict of ``loss*`` terms, which sum to
that Tensor, and logged values (keys without ``loss``); deprecated names
warn; a retrieval loss refuses embeddings that are not of unit length,
naming ``embeddings``.

Device contract, checked without a GPU (``_device_modes``): every loss
runs forward and backward on the ``meta`` device, its host reads answered
from CPU shadows, with the CPU's values and gradients and at most
``HOST_READS`` reads per call (each a wait for the device on CUDA), no
copy of host memory to the device (another wait), and calls no op that
raises under ``torch.use_deterministic_algorithms(True)`` on CUDA.
``tests/test_losses/test_loss_autocast.py`` runs the same losses under an
emulation of CUDA autocast.
"""
import inspect
import math
import re
from typing import Optional

import pytest
import torch
import torch.nn as nn

import mmdet_rankloss.losses as losses
from _device_modes import OpLog, ShadowMeta  # tests/test_losses on sys.path
from mmdet.registry import MODELS
from mmdet_rankloss.losses.ap_rankers import APRanker
from mmdet_rankloss.losses.pairwise import EmbeddingLoss
from mmdet_rankloss.losses.score_space import ClsHooksMixin

DEVICES = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])

REGISTERED = sorted(
    name for name in losses.__all__
    if inspect.isclass(getattr(losses, name))
    and issubclass(getattr(losses, name), nn.Module)
    and MODELS.get(name) is getattr(losses, name))

SEQ = 15  # sorter length: a retrieval row of a batch of 16
# Settings a loss needs to run on the small batches here.
CONFIGS = {
    'MixedRankLoss': dict(rank_loss=dict(type='RaMBOAPLoss', memory=0)),
    'RaMBOAPLoss': dict(memory=0),
    'SoDeepAPLoss': dict(sorter=dict(type='HandcraftedSorter', seq_len=SEQ)),
    'SoDeepRecallLoss': dict(
        sorter=dict(type='HandcraftedSorter', seq_len=SEQ)),
    'SoDeepSpearmanLoss': dict(
        sorter=dict(type='HandcraftedSorter', seq_len=SEQ)),
    'SorterRanker': dict(sorter=dict(type='HandcraftedSorter', seq_len=16)),
}
# Gradients by Algorithm 1 (piecewise-constant value) or random chunks:
# no finite-difference gradient to compare with.
NOT_GRADCHECKED = {'RaMBOAPLoss', 'MixedRankLoss', 'RaMBORecallLoss',
                   'BlackboxRanker', 'SorterRanker'}
# Trained by the error-driven (identity) update, which is not the
# derivative of the value: checked against the papers' update instead.
NOT_GRADCHECKED |= {'RankSortLoss', 'ErrorDrivenAPLoss', 'ALRPLoss'}
# Settings for the float64 gradient check: the value's true derivative.
GRADCHECK_CONFIGS = {'SigmoidRanker': dict(positive_rank_grad=True)}
# Dense (non-rank) terms: not zero on a batch without positives.
DENSE_TERMS = {'loss_cls_aux'}
# Hyper-parameters for which 0 is out of range.
MUST_BE_POSITIVE = {'lambda_val', 'temperature', 'min_std', 'slope',
                    'delta_s', 'num_bins'}
MUST_BE_POSITIVE |= {'delta', 'sb_weight'}
# Hyper-parameters for which a negative value is in range.
NEGATIVE_OK = {'pad_value'}


def kind_of(cls):
    if issubclass(cls, ClsHooksMixin):
        return 'detection'
    if issubclass(cls, EmbeddingLoss):
        return 'embedding'
    if issubclass(cls, APRanker):
        return 'ranker'
    if cls is losses.SoDeepSpearmanLoss:
        return 'pairs'
    return None


def build(name, **overrides):
    return MODELS.build(dict(type=name, **{**CONFIGS.get(name, {}),
                                           **overrides}))


def has_diagnostics(name):
    """Whether the module gives its terms and diagnostics on request."""
    return 'log_diagnostics' in inspect.signature(MODELS.get(name)).parameters


def build_with_terms(name):
    """The module, returning its dict of terms where it has one."""
    return build(name, **(dict(log_diagnostics=True)
                          if has_diagnostics(name) else {}))


@pytest.fixture
def inputs(batch, rpn_batch):
    """``inputs(name, case='plain', dtype=torch.float32, device='cpu')``:
    a differentiable input and the rest of the call for a loss; case is
    'plain', 'empty', 'no_positives' or 'ties'."""

    def make(name, case='plain', dtype=torch.float32, device='cpu'):
        return _inputs(batch, rpn_batch, name, case, dtype, device)

    return make


def _inputs(make_embedding_batch, make_rpn_batch, name, case, dtype,
            device):
    kind = kind_of(MODELS.get(name))
    gen = torch.Generator().manual_seed(0)
    if kind == 'detection':
        x, labels = make_rpn_batch(48, 4, seed=1)
        if case == 'empty':
            x, labels = x[:0], labels[:0]
        elif case == 'no_positives':
            labels = torch.full_like(labels, 4)
        elif case == 'ties':
            x = torch.zeros_like(x)
        rest = (labels.to(device), )
    elif kind == 'embedding':
        x, labels = make_embedding_batch(SEQ + 1, 4, seed=2)
        if case == 'empty':
            x, labels = x[:0], labels[:0]
        elif case == 'no_positives':
            labels = torch.arange(len(labels))
        elif case == 'ties':
            x = torch.ones_like(x) / math.sqrt(x.shape[1])
        rest = (labels.to(device), )
    elif kind == 'ranker':
        x = torch.randn(3, 24, generator=gen)
        positives = torch.rand(3, 24, generator=gen) < 0.3
        positives[:, 0] = True
        if case == 'empty':
            x, positives = x[:0], positives[:0]
        elif case == 'no_positives':
            positives[:] = False
        elif case == 'ties':
            x = torch.zeros_like(x)
        rest = (positives.to(device), 0.1)
    else:  # pairs
        x = torch.randn(4, SEQ, generator=gen)
        target = torch.randn(4, SEQ, generator=gen)
        if case == 'empty':
            x, target = x[:0], target[:0]
        elif case == 'ties':
            x = torch.zeros_like(x)
        rest = (target.to(device), )
    x = x.detach().to(device=device, dtype=dtype).requires_grad_(True)
    return x, rest


def total(out):
    """The scalar that the runner adds up, and the output's loss keys."""
    if isinstance(out, dict):
        keys = [k for k in out if k.startswith('loss')]
        assert keys, f'no loss key in {sorted(out)}'
        return sum(out[k] for k in keys), out
    if isinstance(out, tuple) and hasattr(out, 'loss'):  # APLossResult
        return out.loss, dict(loss=out.loss)
    assert isinstance(out, torch.Tensor), type(out)
    return out, dict(loss=out)


def run(loss, x, rest):
    value, out = total(loss(x, *rest))
    if value.requires_grad:
        value.backward()
    return value, out


def test_every_loss_has_a_kind():
    assert len(REGISTERED) >= 14, REGISTERED
    assert not [n for n in REGISTERED if kind_of(MODELS.get(n)) is None]


@pytest.mark.parametrize('name', REGISTERED)
def test_build_from_config_and_output_keys(name, inputs):
    loss = build(name)
    value, out = run(loss, *inputs(name))
    assert value.dim() == 0 and torch.isfinite(value)
    for key, v in out.items():
        assert v.dim() == 0 and torch.isfinite(v), key
        if not key.startswith('loss'):
            assert 'loss' not in key  # logged only, never summed
    assert type(loss).__name__ in repr(loss)


@pytest.mark.parametrize('name', REGISTERED)
@pytest.mark.parametrize('case', ['empty', 'no_positives', 'ties'])
def test_degenerate_batches_give_finite_values_and_grads(name, case, inputs):
    if case == 'no_positives' and kind_of(MODELS.get(name)) == 'pairs':
        pytest.skip('a Spearman loss has no positives')
    loss = build_with_terms(name)  # each term checked
    x, rest = inputs(name, case)
    value, out = run(loss, x, rest)
    assert all(torch.isfinite(v).all() for v in out.values())
    assert value.requires_grad, 'a zero loss must keep the graph (DDP)'
    assert x.grad is not None and torch.isfinite(x.grad).all()
    if case == 'empty' or (case == 'no_positives'
                           and not DENSE_TERMS & set(out)):
        assert value.item() == 0 and not x.grad.any()
    elif case == 'no_positives':
        assert all(v.item() == 0 for k, v in out.items()
                   if k.startswith('loss') and k not in DENSE_TERMS)


@pytest.mark.parametrize('name', REGISTERED)
@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_half_precision_inputs(name, dtype, inputs):
    x, rest = inputs(name, dtype=dtype)
    value, out = run(build(name), x, rest)
    assert all(torch.isfinite(v).all() for v in out.values())
    assert x.grad.dtype == dtype and torch.isfinite(x.grad).all()
    ref, _ = run(build(name), *inputs(name))
    if name not in ('SorterRanker', ):  # random chunks
        assert value.item() == pytest.approx(ref.item(), abs=0.05)


@pytest.mark.parametrize(
    'name', [n for n in REGISTERED if n not in NOT_GRADCHECKED])
def test_float64_gradcheck(name, inputs):
    loss = build(name, **GRADCHECK_CONFIGS.get(name, {}))
    x, rest = inputs(name, dtype=torch.float64)
    if kind_of(type(loss)) == 'embedding':  # a smaller batch is enough
        x = x[:SEQ + 1].detach().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda v: total(loss(v, *rest))[0], (x, ),
                                    atol=1e-6)


@pytest.mark.parametrize('name', [
    n for n in REGISTERED
    if 'loss_weight' in inspect.signature(MODELS.get(n)).parameters])
def test_loss_weight_scales_value_and_gradient(name, inputs):
    grads, values = [], []
    for weight in (1.0, 2.5):
        x, rest = inputs(name)
        value, _ = run(build(name, loss_weight=weight), x, rest)
        values.append(value.detach())
        grads.append(x.grad)
    torch.testing.assert_close(values[1], 2.5 * values[0])
    torch.testing.assert_close(grads[1], 2.5 * grads[0])


@pytest.mark.parametrize('name', REGISTERED)
@pytest.mark.parametrize('device', DEVICES)
def test_output_device_follows_input(name, device, inputs):
    x, rest = inputs(name, device=device)
    value, out = run(build(name).to(device), x, rest)
    assert all(v.device == x.device for v in out.values())
    assert x.grad.device == x.device


def _hyper_parameters():
    """(loss, parameter, bad value) for every scalar hyper-parameter."""
    cases = []
    for name in REGISTERED:
        for param in inspect.signature(MODELS.get(name)).parameters.values():
            kind = param.annotation
            if kind in (float, Optional[float]):
                bad = [math.nan, math.inf, 'x', True]
                if param.name not in NEGATIVE_OK:
                    bad.append(-1.0)
                if param.name in MUST_BE_POSITIVE:
                    bad.append(0.0)
            elif kind is int:
                bad = [-1, 1.5, math.nan, math.inf, '3', True]
                if param.name in MUST_BE_POSITIVE:
                    bad.append(0)
            elif kind is bool:
                bad = ['yes', 1, None]
            elif kind is str:
                bad = ['no-such-value', 3]
            else:
                continue
            cases += [(name, param.name, value) for value in bad]
    return cases


@pytest.mark.parametrize('name, param, value', _hyper_parameters())
def test_bad_hyper_parameter_is_refused_by_name(name, param, value):
    with pytest.raises((ValueError, TypeError), match=re.escape(param)):
        build(name, **{param: value})


@pytest.mark.parametrize('name', REGISTERED)
def test_zero_is_refused_by_name_or_accepted(name):
    """Where 0 is refused, the message names the parameter."""
    for param in inspect.signature(MODELS.get(name)).parameters.values():
        if param.annotation not in (float, int, Optional[float]):
            continue
        try:
            build(name, **{param.name: 0})
        except ValueError as error:
            assert param.name in str(error), (param.name, error)
            assert name in str(error), (name, error)


#: Host reads of one call, forward and backward, on the CUDA path (the
#: device-agnostic branches, which the meta device takes) with this
#: module's inputs: ``.item()``/``bool()``/``int()``/``.tolist()``, copies
#: to the host and ops whose output size depends on the data (``nonzero``,
#: boolean indexing). Counted by ``ShadowMeta``; a loss may not exceed its
#: entry. docs/reliability.md gives the numbers.
HOST_READS = {
    'RaMBOAPLoss': 0, 'MixedRankLoss': 1, 'BlackboxRanker': 0,
    'SigmoidRanker': 2, 'SorterRanker': 11,
    'RaMBORecallLoss': 0, 'FastAPLoss': 3, 'AUCLoss': 4,
    'BatchHardTripletLoss': 5, 'WilcoxonLoss': 5, 'SoftRankThresholdLoss': 8,
    'SoDeepAPLoss': 9, 'SoDeepRecallLoss': 11, 'SoDeepSpearmanLoss': 1,
    # error_driven*.py, rank_sort_loss.py, alrp_loss.py (other owners)
    'RankSortLoss': 1, 'ErrorDrivenAPLoss': 1, 'ALRPLoss': 1,
}
#: Ops that raise in deterministic mode on CUDA, in files of other owners:
#: the losses that call them, and where (none left: the error-driven
#: losses' prefix sums are now block sums, ``prefix_sums``).
DETERMINISM_OWNED_ELSEWHERE = {}


def _on_meta(meta, loss, x, rest):
    loss = meta.module_to_meta(loss)
    xm = meta.to_meta(x.detach()).requires_grad_(True)
    restm = tuple(meta.to_meta(r) if isinstance(r, torch.Tensor) else r
                  for r in rest)
    meta.reset_counts()
    value, out = total(loss(xm, *restm))
    value.backward()
    return xm, value, out


@pytest.mark.parametrize('name', REGISTERED)
def test_runs_on_the_meta_device_with_its_named_host_reads(name, inputs):
    x, rest = inputs(name)
    torch.manual_seed(0)
    ref, ref_out = run(build(name), x, rest)
    torch.manual_seed(0)
    with ShadowMeta() as meta:
        xm, value, out = _on_meta(meta, build(name), x, rest)
        assert all(v.device.type == 'meta' for v in out.values())
        assert xm.grad is not None and xm.grad.device.type == 'meta'
        got = {k: meta.value(v) for k, v in out.items()}
        grad = meta.value(xm.grad)
    assert got.keys() == ref_out.keys()
    for key, v in ref_out.items():
        torch.testing.assert_close(got[key], v.detach(), rtol=1e-5,
                                   atol=1e-6, msg=key)
    torch.testing.assert_close(grad, x.grad, rtol=1e-5, atol=1e-6)
    # and no loss copies host memory to the device (a sync from pageable
    # memory on CUDA)
    assert (meta.reads <= HOST_READS[name] and meta.uploads == 0), \
        meta.trace


@pytest.mark.parametrize('name', [
    pytest.param(n, marks=pytest.mark.xfail(
        reason=DETERMINISM_OWNED_ELSEWHERE[n]))
    if n in DETERMINISM_OWNED_ELSEWHERE else n for n in REGISTERED])
def test_no_op_that_deterministic_cuda_refuses(name, inputs):
    """``randomness.deterministic=True`` on CUDA must not raise: no
    floating-point cumsum (no deterministic CUDA kernel before torch 2.6)
    nor another op that use_deterministic_algorithms refuses there."""
    x, rest = inputs(name)
    with OpLog() as log:
        run(build(name), x, rest)
    assert log.flagged == []


# ---------------------------------------------------------------- one API
#: Modules without a function, and why.
NO_FUNCTION = {'MixedRankLoss': 'a rank loss plus an mmdet loss, both '
               'configured modules: no math of its own'}
#: Functions without a module, and why.
NO_MODULE = {'error_driven_loss': 'the core of the error-driven losses, '
             'returns (loss, parts, loc_weight)'}
#: Function arguments that are data (tensors), not hyper-parameters.
DATA_ARGS = {'valid', 'negatives', 'quality', 'loc_error'}
FUNCTIONS = sorted(n for n in losses.__all__
                   if n.endswith('_loss') and n not in NO_MODULE)


def _stem(name):
    """``'rambo_ap_loss'`` and ``'RaMBOAPLoss'`` -> ``'ramboap'``."""
    return name[:-len('_loss')].replace('_', '') if name.endswith('_loss') \
        else name[:-len('Loss')].lower()


MODULE_OF = {f: next(m for m in REGISTERED if _stem(m) == _stem(f))
             for f in FUNCTIONS
             if any(_stem(m) == _stem(f) for m in REGISTERED)}


def test_one_api_every_module_has_its_function_and_back():
    modules = {_stem(n) for n in REGISTERED
               if n.endswith('Loss') and n not in NO_FUNCTION}
    assert {_stem(f) for f in FUNCTIONS} == modules
    assert len(MODULE_OF) == len(FUNCTIONS) >= 13
    assert all(inspect.isfunction(getattr(losses, f)) for f in FUNCTIONS)


@pytest.mark.parametrize('fn', FUNCTIONS)
def test_one_api_shared_hyper_parameters_same_names_and_defaults(fn):
    """Every hyper-parameter of the function (an argument with a default
    that is not data) is one of the module's, with the same default."""
    module = inspect.signature(MODELS.get(MODULE_OF[fn])).parameters
    function = inspect.signature(getattr(losses, fn)).parameters
    for name, param in function.items():
        if param.default is inspect.Parameter.empty or name in DATA_ARGS:
            continue
        assert name in module, (fn, name)
        assert module[name].default == param.default, (fn, name)


def _function_inputs(fn, batch):
    """Inputs of a function, by its first arguments' names."""
    names = list(inspect.signature(getattr(losses, fn)).parameters)
    gen = torch.Generator().manual_seed(0)
    if names[0] == 'embeddings':
        x, labels = batch(SEQ + 1, 4, seed=2)
        return x.float().requires_grad_(True), (labels, )
    positives = torch.rand(3, 12, generator=gen) < 0.3
    positives[:, 0] = True
    if names[:2] == ['scores', 'positives']:
        return torch.randn(3, 12, generator=gen).requires_grad_(True), \
            (positives, )
    ranks = torch.stack([torch.randperm(12, generator=gen) + 1.0
                         for _ in range(3)]).requires_grad_(True)
    if names[1] == 'target':
        return ranks, (torch.randn(3, 12, generator=gen), )
    return ranks, (positives, ~positives)[:1 + ('negatives' in names)]


@pytest.mark.parametrize('fn', FUNCTIONS)
def test_one_api_functions_return_a_scalar_tensor(fn, batch):
    x, rest = _function_inputs(fn, batch)
    value = getattr(losses, fn)(x, *rest)
    assert isinstance(value, torch.Tensor) and value.dim() == 0
    value.backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()


@pytest.mark.parametrize('name', [
    n for n in REGISTERED
    if kind_of(MODELS.get(n)) in ('embedding', 'pairs', 'detection')
])
def test_one_api_modules_return_a_tensor(name, inputs):
    x, rest = inputs(name)
    value = build(name)(x, *rest)
    assert isinstance(value, torch.Tensor) and value.dim() == 0
    value.backward()  # no dict to unpack first
    assert x.grad is not None


DIAGNOSED = [n for n in REGISTERED if has_diagnostics(n)]


def test_one_api_every_detection_module_has_diagnostics_on_request():
    detection = {n for n in REGISTERED
                 if kind_of(MODELS.get(n)) == 'detection'}
    assert detection and detection <= set(DIAGNOSED)
    for name in DIAGNOSED:
        doc = inspect.getdoc(MODELS.get(name))
        assert 'log_diagnostics' in doc, name
        assert build(name).log_diagnostics is False, name


@pytest.mark.parametrize('name', DIAGNOSED)
def test_one_api_diagnostics_on_request_terms_sum_to_the_tensor(name,
                                                                inputs):
    """``log_diagnostics=True``: a dict whose ``loss*`` terms sum to the
    Tensor of the default module (``terms()``, where a module has it, is
    that dict), and whose other keys hold no ``loss``."""
    x, rest = inputs(name)
    value = build(name)(x, *rest)
    out = build(name, log_diagnostics=True)(x, *rest)
    assert isinstance(out, dict)
    keys = [k for k in out if 'loss' in k]
    assert keys and all(k.startswith('loss') for k in keys)
    torch.testing.assert_close(sum(out[k] for k in keys), value)
    if hasattr(build(name), 'terms'):
        terms = build(name).terms(x, *rest)
        assert set(terms) == set(keys)  # the diagnostics on request only
        assert set(build(name).terms(x, *rest, diagnostics=True)) == \
            set(out)


def test_one_api_recall_diagnostics_and_memory_on_request(inputs):
    x, rest = inputs('RaMBORecallLoss')
    loss = build('RaMBORecallLoss')
    assert loss(x, *rest).item() == loss(x, *rest).item()  # no memory
    out = build('RaMBORecallLoss', log_diagnostics=True)(x, *rest)
    assert 'loss_rambo_recall' in out and 'rambo_recall_r1' in out
    remembering = build('RaMBORecallLoss', memory=3)
    assert remembering(x, *rest).item() != remembering(x, *rest).item()


@pytest.mark.parametrize('old, new', sorted(losses.DEPRECATED.items()))
def test_one_api_deprecated_names_warn_and_compute_as_before(old, new,
                                                               batch):
    x, rest = _function_inputs(new, batch)
    with pytest.warns(DeprecationWarning, match=f'{old}.*{new}'):
        got = getattr(losses, old)(x, *rest)
    old_defaults = dict(margin=0.0) if old == 'average_precision_loss' \
        else {}
    assert got.item() == getattr(losses, new)(x, *rest,
                                              **old_defaults).item()


def test_one_api_renamed_keyword_warns():
    scores = torch.randn(2, 8)
    positives = torch.rand(2, 8) < 0.5
    expected = losses.rambo_ap_loss(scores, positives)
    with pytest.warns(DeprecationWarning, match='labels.*positives'):
        got = losses.rambo_ap_loss(scores, labels=positives)
    assert got.item() == expected.item()
    with pytest.raises(TypeError, match='labels'):
        losses.rambo_ap_loss(scores, positives=positives, labels=positives)


@pytest.mark.parametrize('name', [
    n for n in REGISTERED if kind_of(MODELS.get(n)) == 'embedding'] + [
    f for f in FUNCTIONS if next(iter(inspect.signature(
        getattr(losses, f)).parameters)) == 'embeddings'])
@pytest.mark.parametrize('scale', [0.5, 2.0])
def test_one_api_embeddings_must_have_unit_length(name, scale, batch):
    x, labels = batch(SEQ + 1, 4, seed=2)
    loss = build(name) if name in REGISTERED else getattr(losses, name)
    with pytest.raises(ValueError, match='embeddings must have unit L2'):
        loss(x.float() * scale, labels)
