"""Two CPU stand-ins for a GPU, for the device tests of the losses.

No GPU is available to this project, so the CUDA path is checked on CPU:

* :class:`CudaAutocastEmulation`: CUDA autocast's op lists (PyTorch AMP
  docs, "CUDA Ops that can autocast to float16 / float32 / promote") as a
  ``TorchFunctionMode`` that casts the inputs of those ops. Its switch is
  CPU autocast's own flag, so code that leaves autocast with
  ``torch.autocast(x.device.type, enabled=False)`` runs in fp32 here as it
  would on CUDA. Enter it inside ``torch.autocast('cpu',
  dtype=torch.float16)`` (:func:`cuda_autocast`); CPU autocast's own casts
  then apply as well: its fp16 list is CUDA's (conv, mm, bmm, matmul,
  linear, addmm, baddbmm, ...), its fp32 list adds some linear algebra and
  losses that CUDA runs in the input dtype. Python functions (e.g.
  ``F.normalize``) are cast by their own name only: ops they call inside
  are not seen, where CUDA autocast would see them.
* :class:`ShadowMeta`: runs code on the ``meta`` device, each meta tensor
  backed by a CPU *shadow* holding its value. Every op runs twice: on the
  meta tensors (the real meta kernels, which check devices as CUDA kernels
  do: a CPU tensor other than a 0-dim scalar mixed in raises) and on the
  shadows (the values). A host read (``.item()``, ``bool()``, ``int()``,
  ``.tolist()``, a copy to the CPU) and an op whose output shape depends on
  the data (``nonzero``, boolean indexing, ``unique``, ...) each wait for
  the device on CUDA: they are counted in :attr:`ShadowMeta.syncs` and
  answered from the shadows. So is a copy of CPU memory to the device
  (``new_tensor`` of Python data, ``torch.tensor(..., device=dev)``,
  ``.to(dev)`` or ``copy_`` of a CPU tensor): from pageable memory CUDA
  waits for it (kind ``'copy to device'``, or ``'copy to device in
  mmdet'`` made by MMDetection's code, e.g. its box coders' means and
  ``bbox_overlaps``' eps: :attr:`ShadowMeta.uploads`;
  :attr:`ShadowMeta.reads` counts the rest). Branches for
  ``device.type == 'cpu'`` (the NumPy sorts) are not taken on meta, so the
  counts are those of the CUDA path.
"""
import collections
import contextlib
import traceback
from typing import Callable, Dict

import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map
from torch.utils.weak import WeakIdKeyDictionary

__all__ = [
    'CUDA_FP16_OPS', 'CUDA_FP32_OPS', 'CUDA_PROMOTE_OPS',
    'CudaAutocastEmulation', 'cuda_autocast', 'ShadowMeta'
]

#: "CUDA Ops that can autocast to float16" (PyTorch AMP docs), plus the
#: cuDNN RNNs, which autocast casts too (``AutocastRNN.cpp``).
CUDA_FP16_OPS = frozenset({
    'matmul', 'addbmm', 'addmm', 'addmv', 'addr', 'baddbmm', 'bmm',
    'chain_matmul', 'multi_dot', 'conv1d', 'conv2d', 'conv3d',
    'conv_transpose1d', 'conv_transpose2d', 'conv_transpose3d', 'GRUCell',
    'linear', 'LSTMCell', 'mm', 'mv', 'prelu', 'RNNCell', 'lstm', 'gru',
    'rnn_tanh', 'rnn_relu'
})
#: "CUDA Ops that can autocast to float32" (``__pow__``, ``__rdiv__``,
#: ``__rpow__`` and ``__rtruediv__`` are listed there by these names).
CUDA_FP32_OPS = frozenset({
    'pow', 'rdiv', 'rpow', 'rtruediv', 'acos', 'asin',
    'binary_cross_entropy_with_logits', 'cosh', 'cosine_embedding_loss',
    'cdist', 'cosine_similarity', 'cross_entropy', 'cumprod', 'cumsum',
    'dist', 'erfinv', 'exp', 'expm1', 'group_norm', 'hinge_embedding_loss',
    'kl_div', 'l1_loss', 'layer_norm', 'log', 'log_softmax', 'log10',
    'log1p', 'log2', 'margin_ranking_loss', 'mse_loss',
    'multilabel_margin_loss', 'multi_margin_loss', 'nll_loss', 'norm',
    'normalize', 'pdist', 'poisson_nll_loss', 'prod', 'reciprocal', 'rsqrt',
    'sinh', 'smooth_l1_loss', 'soft_margin_loss', 'softmax', 'softmin',
    'softplus', 'sum', 'renorm', 'tan', 'triplet_margin_loss'
})
#: "CUDA Ops that promote to the widest input type".
CUDA_PROMOTE_OPS = frozenset({
    'addcdiv', 'addcmul', 'atan2', 'bilinear', 'cross', 'dot', 'grid_sample',
    'index_put', 'scatter_add', 'tensordot'
})
_CAST_FROM = (torch.float32, torch.float16, torch.bfloat16)  # not float64


def _op_name(func) -> str:
    """``Tensor.__rpow__`` -> ``'rpow'``, ``torch.matmul`` -> ``'matmul'``;
    '' for in-place variants (autocast leaves those alone)."""
    name = getattr(func, '__name__', '')
    if name.startswith('__') and name.endswith('__'):
        name = name[2:-2]
        if name.startswith('i') and name[1:] in ('add', 'sub', 'mul', 'pow',
                                                 'truediv', 'div', 'matmul'):
            return ''
        if name == 'rmatmul':
            return 'matmul'
        return name
    return '' if name.endswith('_') else name


def _floats(tree):
    return [t for t in tree_flatten(tree)[0]
            if isinstance(t, Tensor) and t.dtype in _CAST_FROM]


class CudaAutocastEmulation(TorchFunctionMode):
    """CUDA autocast's op lists on CPU tensors (module docstring).

    Active while CPU autocast is enabled; ``cast_counts`` counts the calls
    cast to each dtype, ``seen`` the calls of listed ops (cast or, in a
    region that left autocast, not), to show what was exercised.
    """

    def __init__(self) -> None:
        super().__init__()
        self.cast_counts = collections.Counter()
        self.seen = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _op_name(func)
        if name in CUDA_FP16_OPS | CUDA_FP32_OPS | CUDA_PROMOTE_OPS:
            self.seen[name] += 1
        if not torch.is_autocast_enabled('cpu'):
            return func(*args, **kwargs)
        target = None
        if name in CUDA_FP16_OPS:
            target = torch.float16
        elif name in CUDA_FP32_OPS:
            target = torch.float32
        elif name in CUDA_PROMOTE_OPS:
            dtypes = {t.dtype for t in _floats((args, kwargs))}
            if len(dtypes) > 1:
                target = torch.promote_types(*dtypes) if len(dtypes) == 2 \
                    else torch.float32
        if target is not None and _floats((args, kwargs)):
            self.cast_counts[target] += 1

            def cast(t):
                if isinstance(t, Tensor) and t.dtype in _CAST_FROM:
                    return t.to(target)
                return t

            args, kwargs = tree_map(cast, (args, kwargs))
        return func(*args, **kwargs)


@contextlib.contextmanager
def cuda_autocast():
    """``torch.autocast('cuda', dtype=torch.float16)`` as CPU code sees it
    (the emulation inside CPU fp16 autocast); yields the emulation."""
    emulation = CudaAutocastEmulation()
    with torch.autocast('cpu', dtype=torch.float16), emulation:
        yield emulation


# ---------------------------------------------------------------- meta
#: Ops that wait for the device on CUDA: their output shape (or a Python
#: value) depends on the data.
_SYNC_OPS = frozenset({
    'aten::_local_scalar_dense', 'aten::nonzero', 'aten::masked_select',
    'aten::_unique', 'aten::_unique2', 'aten::unique_dim',
    'aten::unique_consecutive', 'aten::bincount', 'aten::equal',
    'aten::histc', 'aten::masked_scatter'
})


#: Ops that allocate or re-describe memory without launching a kernel.
_NOT_KERNELS = frozenset({
    'aten::empty', 'aten::empty_strided', 'aten::empty_like',
    'aten::new_empty', 'aten::new_empty_strided', 'aten::lift_fresh',
    'aten::_to_copy_meta', 'aten::set_', 'aten::resize_'
})


def _is_bool_index(indices) -> bool:
    return any(isinstance(i, Tensor) and i.dtype in (torch.bool, torch.uint8)
               for i in indices or ())


def _in_mmdet() -> bool:
    """Whether the innermost frame of MMDetection or of the package is
    MMDetection's."""
    for frame in reversed(traceback.extract_stack()):
        if '/mmdet_rankloss/' in frame.filename:
            return False
        if '/mmdet/' in frame.filename:
            return True
    return False


def _caller() -> str:
    """The innermost frame of the package, for the sync trace."""
    for frame in reversed(traceback.extract_stack()):
        if '/mmdet_rankloss/' in frame.filename:
            return (f'{frame.filename.split("/mmdet_rankloss/")[-1]}:'
                    f'{frame.lineno} {frame.name}')
    return '?'


class _ShadowFactories(TorchFunctionMode):
    """``torch.tensor(..., device='meta')`` and friends build the tensor
    without an op the dispatch mode sees: build it on the CPU and move it
    (the host-to-device copy CUDA makes, counted as such)."""

    _FACTORIES = ('tensor', 'as_tensor', 'asarray', 'new_tensor')

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        device = kwargs.get('device')
        if getattr(func, '__name__', '') in self._FACTORIES:
            if func.__name__ == 'new_tensor' and device is None:
                device = args[0].device
                kwargs.setdefault('dtype', args[0].dtype)
                args = (torch.empty(0), ) + tuple(args[1:])
            if device is not None and torch.device(device).type == 'meta':
                kwargs['device'] = 'cpu'
                return func(*args, **kwargs).to('meta')
        return func(*args, **kwargs)


class ShadowMeta(TorchDispatchMode):
    """Meta tensors with CPU values; host reads counted (module docstring).

    Use as ``with ShadowMeta() as meta:``; move inputs and modules with
    :meth:`to_meta` / :meth:`module_to_meta` inside, read values with
    :meth:`value`. ``syncs`` counts the waits per kind, ``trace`` lists
    them with the package line that caused them; ``no_meta_kernel`` lists
    ops that have no meta kernel (answered from the shadows, not syncs).
    ``ops`` counts the kernel ops run on meta tensors by name (views and
    allocations without a kernel excluded: :data:`_NOT_KERNELS`),
    ``op_sites`` the same ops by the package line that ran them: what a
    CUDA step launches, and where the launches come from.
    """

    def __init__(self) -> None:
        super().__init__()
        self._shadow = WeakIdKeyDictionary()
        self.syncs: Dict[str, int] = collections.Counter()
        self.trace = []
        self.no_meta_kernel = set()
        self.ops: Dict[str, int] = collections.Counter()
        self.op_sites: Dict[str, int] = collections.Counter()
        self._factories = _ShadowFactories()

    def __enter__(self):
        self._factories.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            self._factories.__exit__(*exc)

    @property
    def total(self) -> int:
        """Waits of both kinds: :attr:`reads` + :attr:`uploads`."""
        return sum(self.syncs.values())

    @property
    def uploads(self) -> int:
        """Copies of CPU (pageable) memory to the device."""
        return self.syncs['copy to device'] + self.mmdet_uploads

    @property
    def mmdet_uploads(self) -> int:
        """The :attr:`uploads` made by MMDetection's code."""
        return self.syncs['copy to device in mmdet']

    @property
    def reads(self) -> int:
        """Reads of device data back to the host (and data-dependent
        shapes)."""
        return self.total - self.uploads

    @property
    def num_ops(self) -> int:
        """Kernel ops counted since the last :meth:`reset_counts`."""
        return sum(self.ops.values())

    def reset_counts(self) -> None:
        self.syncs.clear()
        self.trace.clear()
        self.ops.clear()
        self.op_sites.clear()

    def op_report(self, top: int = 15) -> str:
        """The package lines that ran the most kernel ops, for a failing
        budget's message."""
        lines = [f'{count:5d}  {site}'
                 for site, count in self.op_sites.most_common(top)]
        return (f'{self.num_ops} kernel ops, {self.reads} host reads, '
                f'{self.uploads} copies to the device {dict(self.syncs)}; '
                'ops by line:\n' + '\n'.join(lines))

    def to_meta(self, tensor: Tensor) -> Tensor:
        """A meta copy of a CPU tensor (a leaf keeps ``requires_grad``),
        not counted: the test's input, on the device already."""
        if tensor.device.type != 'cpu':
            return tensor.detach().to('meta').requires_grad_(
                tensor.requires_grad)
        with torch.utils._python_dispatch._disable_current_modes():
            out = tensor.detach().to('meta')
            self._shadow[out] = tensor.detach().clone()
        return out.requires_grad_(tensor.requires_grad)

    def module_to_meta(self, module: torch.nn.Module) -> torch.nn.Module:
        """Moves a module's parameters and buffers to meta, with values."""
        def tensors():
            return list(module.named_parameters()) + \
                list(module.named_buffers())

        with torch.utils._python_dispatch._disable_current_modes():
            values = {name: t.detach().clone() for name, t in tensors()}
            module.to('meta')
        for name, t in tensors():
            self._shadow[t] = values[name]
        return module

    def value(self, tensor: Tensor) -> Tensor:
        """The CPU value of a meta tensor."""
        return self._shadow[tensor]

    def _record(self, kind: str) -> None:
        self.syncs[kind] += 1
        self.trace.append((kind, _caller()))

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name

        def unwrap(t):
            if isinstance(t, Tensor) and t.device.type == 'meta':
                if t not in self._shadow:
                    raise AssertionError(
                        f'{name}: a meta tensor without a value (made '
                        'outside ShadowMeta, or by an op it cannot see)')
                return self._shadow[t]
            if isinstance(t, torch.device) and t.type == 'meta':
                return torch.device('cpu')
            if isinstance(t, str) and t == 'meta':
                return 'cpu'
            return t

        leaves = tree_flatten((args, kwargs))[0]
        if not any((isinstance(v, Tensor) and v.device.type == 'meta') or (
                isinstance(v, (torch.device, str)) and str(v) == 'meta')
                   for v in leaves):
            return func(*args, **kwargs)
        cpu_args, cpu_kwargs = tree_map(unwrap, (args, kwargs))
        to_host = name in ('aten::_to_copy', 'aten::to', 'aten::copy_',
                           'aten::_copy_from') and any(
            isinstance(a, Tensor) and a.device.type == 'meta'
            for a in args[:1]) and self._target_is_cpu(func, args, kwargs)
        src = args[1] if name == 'aten::copy_' else args[0] if args else None
        to_device = name in ('aten::_to_copy', 'aten::copy_',
                             'aten::_copy_from') and isinstance(
            src, Tensor) and src.device.type == 'cpu'
        values = func(*cpu_args, **cpu_kwargs)
        if name == 'aten::_local_scalar_dense':
            self._record('item')
            return values
        if to_host:
            self._record('copy to host')
            return values
        if to_device:
            self._record('copy to device in mmdet' if _in_mmdet() else
                         'copy to device')
        sync = name in _SYNC_OPS or (
            name in ('aten::index', 'aten::index_put', 'aten::index_put_',
                     'aten::_index_put_impl_')
            and _is_bool_index(args[1])) or (
            name == 'aten::repeat_interleave'
            and kwargs.get('output_size') is None)
        if sync:
            self._record(name.split('::')[1])
        if not (func.is_view or name in _NOT_KERNELS):
            self.ops[name] += 1
            self.op_sites[_caller()] += 1
        try:
            out = func(*args, **kwargs)
        except NotImplementedError:
            # no meta kernel: a data-dependent shape, or none written
            if not sync:
                self.no_meta_kernel.add(name)
            out = tree_map(
                lambda v: torch.empty_strided(
                    v.shape, v.stride(), dtype=v.dtype, device='meta')
                if isinstance(v, Tensor) else v, values)
        metas, _ = tree_flatten(out)
        cpus, _ = tree_flatten(values)
        for m, c in zip(metas, cpus):
            if isinstance(m, Tensor) and isinstance(c, Tensor) and \
                    m.device.type == 'meta':
                self._shadow[m] = c
        return out

    @staticmethod
    def _target_is_cpu(func, args, kwargs) -> bool:
        name = func._schema.name
        if name == 'aten::copy_':
            return False  # into a meta tensor (copies into CPU: _copy_from)
        if name == 'aten::_copy_from':
            return args[1].device.type == 'cpu'
        device = kwargs.get('device')
        if device is None:
            device = next((a for a in args[1:]
                           if isinstance(a, (torch.device, str))), None)
        return device is not None and torch.device(device).type == 'cpu'


def count_syncs(fn: Callable, *args, **kwargs):
    """(result, ShadowMeta) of ``fn`` run inside a fresh :class:`ShadowMeta`
    (``fn`` moves its own inputs with the mode it is given)."""
    with ShadowMeta() as meta:
        result = fn(meta, *args, **kwargs)
    return result, meta


# --------------------------------------------------------- determinism
#: Ops that raise under ``torch.use_deterministic_algorithms(True)`` on
#: CUDA in a torch the install accepts (2.0 to 2.13), as listed by that
#: function's documentation: a floating-point ``cumsum`` (its
#: deterministic kernel came with torch 2.6), ``bincount`` with weights,
#: ``histc``, ``kthvalue``, ``median`` with indices, ``put_`` without
#: accumulation and ``scatter_reduce``/``index_reduce`` with 'prod'.
def raises_when_deterministic_on_cuda(name: str, args, kwargs) -> bool:
    first = args[0] if args else None
    floating = isinstance(first, Tensor) and (first.is_floating_point()
                                              or first.is_complex())
    if name == 'aten::cumsum':
        dtype = kwargs.get('dtype') or (args[2] if len(args) > 2 else None)
        return dtype.is_floating_point if dtype is not None else floating
    if name == 'aten::bincount':
        return (kwargs.get('weights') if 'weights' in kwargs else (
            args[1] if len(args) > 1 else None)) is not None
    if name in ('aten::histc', 'aten::kthvalue'):
        return True
    if name == 'aten::median':
        return len(args) > 1 or 'dim' in kwargs
    if name in ('aten::put_', 'aten::put'):
        return not kwargs.get('accumulate', args[3] if len(args) > 3
                              else False)
    if name in ('aten::scatter_reduce', 'aten::scatter_reduce_',
                'aten::index_reduce', 'aten::index_reduce_'):
        return 'prod' in [a for a in args if isinstance(a, str)] + [
            kwargs.get('reduce')]
    return False


class OpLog(TorchDispatchMode):
    """Records the ops that would raise in deterministic mode on CUDA
    (:func:`raises_when_deterministic_on_cuda`), with the package line."""

    def __init__(self) -> None:
        super().__init__()
        self.flagged = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func._schema.name
        if raises_when_deterministic_on_cuda(name, args, kwargs):
            self.flagged.append((name, _caller()))
        return func(*args, **kwargs)
