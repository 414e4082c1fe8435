"""The pieces of the one-command speed run (``benchmark_rank_losses.py
--speed-run``): timing on any device, a plan of items run within a time
budget with progress and an ETA, and detector training steps (eager, with
the losses under ``torch.compile``, under AMP).

Every time is a median of wall times with the device synchronised around
each call. A run writes one JSON (:data:`FORMAT`); its sections are lists
of rows, and what the budget left out is listed under ``skipped``.
"""
import contextlib
import logging
import os
import os.path as osp
import signal
import statistics
import threading
import time
import types
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

from rankloss_lab.paths import ROOT
from rankloss_lab.run_logs import machine_name
from rankloss_lab.runner import Progress, clock

__all__ = ['FORMAT', 'SECTIONS', 'sync', 'PeakMemory', 'time_it',
           'device_label', 'Plan', 'build_detector', 'detector_batch',
           'train_step', 'step_time', 'capture_loss_calls',
           'loss_calls_time', 'compile_losses', 'amp_scaler', 'share_row',
           'amp_row']

#: The ``format`` of a speed-run JSON (the docs' generator reads it).
FORMAT = 'speed-run/1'
#: The sections of a speed-run JSON, in the order they run.
SECTIONS = ('lengths', 'per_step', 'step_share', 'amp', 'step_share_compile')


def sync(device: torch.device) -> None:
    """Waits for ``device`` (a no-op on CPU)."""
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


class PeakMemory:
    """Peak memory above the level at entry: CUDA allocator stats, or the
    process RSS sampled every millisecond on CPU (an estimate from below)."""

    def __init__(self, device: torch.device):
        self.device = device
        self.peak = 0

    @staticmethod
    def _rss() -> int:
        with open('/proc/self/statm') as f:
            return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')

    def __enter__(self):
        if self.device.type == 'cuda':
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.base = torch.cuda.memory_allocated(self.device)
            return self
        self.base = self._rss()
        self._stop = False
        self._max = self.base

        def sample():
            while not self._stop:
                self._max = max(self._max, self._rss())
                time.sleep(0.001)

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.device.type == 'cuda':
            torch.cuda.synchronize(self.device)
            self.peak = (torch.cuda.max_memory_allocated(self.device) -
                         self.base)
        else:
            self._stop = True
            self._thread.join()
            self.peak = max(self._max, self._rss()) - self.base
        return False


def time_it(fn: Callable[[], None], device: torch.device, repeats: int,
            min_time: float = 0.0) -> Dict[str, float]:
    """Median wall time of ``fn`` after one warm-up call, and its peak
    memory (measured on a separate call)."""
    fn()
    sync(device)
    with PeakMemory(device) as mem:
        fn()
        sync(device)
    times = []
    start = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t0)
    return dict(median_s=statistics.median(times), min_s=min(times),
                runs=len(times), peak_mem_mb=mem.peak / 2**20)


def device_label(device: torch.device) -> str:
    """The device's name: ``torch.cuda.get_device_name`` on CUDA, the CPU
    model otherwise."""
    if device.type == 'cuda':
        return torch.cuda.get_device_name(device)
    if torch.cuda.is_available():  # machine_name() names the GPU then
        return 'CPU'
    return machine_name().rsplit(', torch', 1)[0]


class Plan:
    """Items run one after the other within a time budget.

    Each item is ``(section, name, fn, expect_s)``: ``fn()`` returns the
    row's fields (a dict). A failing item gives a row with ``error``; an
    item that the budget cannot fit is not run and is listed under
    ``skipped`` with the reason. The budget is judged before each item from
    the time spent and the item's expected seconds, scaled by how the
    finished items compared with theirs; an item still running
    :attr:`grace_s` after the budget is stopped (``error``: a timeout). A
    line after each item gives the items done, the time spent and the ETA.

    Args:
        budget_s (float): Seconds the whole plan may take.
    """

    #: Seconds an item may run past the budget before it is stopped.
    grace_s = 30.0

    def __init__(self, budget_s: float) -> None:
        self.budget_s = float(budget_s)
        self.items: List[Tuple[str, str, Callable[[], dict], float]] = []
        self.fields: List[dict] = []

    def add(self, section: str, name: str, fn: Callable[[], dict],
            expect_s: float = 1.0, **fields) -> None:
        """One item; ``fields`` go into its row whether it runs or fails."""
        if section not in SECTIONS:
            raise ValueError(f'Plan.add: unknown section {section!r}')
        self.items.append((section, name, fn, float(expect_s)))
        self.fields.append(fields)

    def run(self, result: dict) -> dict:
        """Runs the items; fills ``result[section]`` and
        ``result['skipped']``; returns ``result``."""
        for section in SECTIONS:
            result.setdefault(section, [])
        result.setdefault('skipped', [])
        progress = Progress([e for *_, e in self.items], prefix='    ')
        start, spent_expected = time.perf_counter(), 0.0
        for (section, name, fn, expect_s), fields in zip(self.items,
                                                         self.fields):
            elapsed = time.perf_counter() - start
            pace = max(1.0, elapsed / spent_expected) if spent_expected \
                else 1.0
            if elapsed + expect_s * pace > self.budget_s:
                result['skipped'].append(dict(
                    section=section, name=name, **fields,
                    reason=f'time budget: {clock(elapsed)} spent of '
                    f'{clock(self.budget_s)}, about {expect_s * pace:.0f} s '
                    'more needed'))
                progress.step(f'{section}: {name} skipped (budget)', 0.0)
                continue
            t0 = time.perf_counter()
            limit = max(self.budget_s - elapsed, 5.0) + self.grace_s
            result[section].append(dict(name=name, **fields,
                                        **_run_item(fn, limit)))
            took = time.perf_counter() - t0
            spent_expected += expect_s
            progress.step(f'{section}: {name}', took)
        result['elapsed_s'] = time.perf_counter() - start
        return result


class ItemTimeout(Exception):
    """An item ran past its time limit."""


def _alarm(signum, frame):
    raise ItemTimeout('stopped: past the time budget')


def _run_item(fn: Callable[[], dict], limit_s: float) -> dict:
    """``fn()``'s fields, or ``error`` with the exception's type and text;
    ``fn`` is stopped after ``limit_s`` seconds (SIGALRM, main thread)."""
    timed = threading.current_thread() is threading.main_thread()
    if timed:
        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        return fn()
    except Exception as error:  # noqa: BLE001 (recorded in the JSON)
        text = str(error).strip().splitlines()
        return dict(error=f'{type(error).__name__}: '
                    f'{text[0][:300] if text else ""}')
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------
# Detector training steps on random data


def build_detector(config: str, device: torch.device):
    """The model of ``config`` (a path from the repository root) with random
    weights (no download), in train mode on ``device``; and its config."""
    from mmengine.config import Config
    from mmengine.registry import init_default_scope

    from mmdet.registry import MODELS
    cfg = Config.fromfile(osp.join(ROOT, config))
    cfg.model.backbone.init_cfg = None
    init_default_scope('mmdet')
    model = MODELS.build(cfg.model)
    with _quiet_logger():  # MMEngine logs every parameter's init
        model.init_weights()
    _apply_fp32_logits_hooks(cfg, model)
    return model.to(device).train(), cfg


@contextlib.contextmanager
def _quiet_logger():
    """MMEngine's current logger at WARNING inside the block."""
    from mmengine.logging import MMLogger
    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _apply_fp32_logits_hooks(cfg, model) -> None:
    """What the config's ``RankLogitsFp32Hook`` does before a run (the
    RaMBO classifier in fp32 under autocast), as training would."""
    from mmdet_rankloss.engine.precision import RankLogitsFp32Hook
    for hook in cfg.get('custom_hooks', []):
        if hook.get('type') == 'RankLogitsFp32Hook':
            args = {k: v for k, v in hook.items()
                    if k not in ('type', 'priority')}
            RankLogitsFp32Hook(**args).before_run(
                types.SimpleNamespace(model=model))


def _num_classes(model) -> int:
    head = getattr(model, 'bbox_head', None) or model.roi_head.bbox_head
    return head.num_classes


def detector_batch(model, size: Sequence[int], images: int = 2) -> dict:
    """A random batch (``images`` x ``size`` = (H, W), 4 boxes each) through
    the model's data preprocessor, on the model's device."""
    from mmengine.structures import InstanceData

    from mmdet.structures import DetDataSample
    g = torch.Generator().manual_seed(0)
    h, w = size = tuple(size)
    inputs, samples = [], []
    for _ in range(images):
        inputs.append(torch.randint(0, 256, (3, h, w), generator=g,
                                    dtype=torch.uint8))
        xy = torch.rand(4, 2, generator=g) * torch.tensor([w * 0.6, h * 0.6])
        wh = 40 + torch.rand(4, 2, generator=g) * torch.tensor(
            [w * 0.35, h * 0.35])
        s = DetDataSample(metainfo=dict(img_shape=size, ori_shape=size,
                                        scale_factor=(1.0, 1.0)))
        s.gt_instances = InstanceData(
            bboxes=torch.cat([xy, xy + wh], 1),
            labels=torch.randint(0, _num_classes(model), (4, ), generator=g))
        samples.append(s)
    return model.data_preprocessor(dict(inputs=inputs, data_samples=samples),
                                   True)


def amp_scaler(device: torch.device):
    """A GradScaler for ``device`` (``torch.amp``'s where it exists)."""
    if hasattr(torch.amp, 'GradScaler'):
        return torch.amp.GradScaler(device.type)
    return torch.cuda.amp.GradScaler()


def train_step(model, data, optimizer, scaler=None) -> torch.Tensor:
    """One SGD step on the summed losses; with ``scaler``, the forward runs
    under fp16 autocast and the backward through the scaler (what
    ``--amp``'s ``AmpOptimWrapper`` does). Returns the summed loss."""
    device = next(model.parameters()).device
    with torch.autocast(device.type, dtype=torch.float16,
                        enabled=scaler is not None):
        losses = model(**data, mode='loss')
    total = sum(v.sum() if isinstance(v, torch.Tensor) else sum(v)
                for k, v in losses.items() if 'loss' in k)
    optimizer.zero_grad()
    if scaler is None:
        total.backward()
        optimizer.step()
    else:
        scaler.scale(total).backward()
        scaler.step(optimizer)
        scaler.update()
    return total.detach()


def step_time(model, data, steps: int, amp: bool = False) -> dict:
    """Median seconds of ``steps`` training steps after one warm-up step;
    under ``amp`` also whether every loss was finite and the final scale."""
    device = next(model.parameters()).device
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-5, momentum=0.9)
    scaler = amp_scaler(device) if amp else None
    times, finite = [], True
    for i in range(steps + 1):
        sync(device)
        t0 = time.perf_counter()
        total = train_step(model, data, optimizer, scaler)
        sync(device)
        if i:
            times.append(time.perf_counter() - t0)
        finite = finite and bool(torch.isfinite(total))
    out = dict(step_s=statistics.median(times), steps=len(times))
    if amp:
        out.update(loss_finite=finite, grad_scale=float(scaler.get_scale()))
    return out


def _loss_modules(model) -> Dict[str, torch.nn.Module]:
    """The classification losses of the model's heads, by module name."""
    return {name: m for name, m in model.named_modules()
            if name.endswith('loss_cls') and name.count('loss_cls') == 1}


def _entry_points(module) -> List[str]:
    """The methods a head calls on a loss: ``forward``, and ``terms`` where
    the loss has it (the package's heads call ``terms``)."""
    return ['forward'] + (['terms'] if hasattr(module, 'terms') else [])


def capture_loss_calls(model, data) -> Dict[str, list]:
    """The inputs each classification loss gets in one forward pass, by the
    method the head called: ``{module name: [(scores, args, kwargs,
    method), ...]}``."""
    calls: Dict[str, list] = {}
    modules = _loss_modules(model)
    inside = []

    def capturing(name, method, original):
        def call(score, *args, **kwargs):
            if not inside:  # the head's call, not forward's own terms()
                calls.setdefault(name, []).append(
                    (score.detach(), args, kwargs, method))
            inside.append(method)
            try:
                return original(score, *args, **kwargs)
            finally:
                inside.pop()
        return call

    for name, m in modules.items():
        for method in _entry_points(m):
            setattr(m, method, capturing(name, method, getattr(m, method)))
    try:
        with torch.no_grad():
            model(**data, mode='loss')
    finally:
        for m in modules.values():
            for method in _entry_points(m):
                delattr(m, method)
    return calls


def _summed(out) -> torch.Tensor:
    if isinstance(out, dict):
        out = sum(v.sum() for k, v in out.items()
                  if 'loss' in k and isinstance(v, torch.Tensor))
    return out.sum()


def loss_calls_time(model, calls: Dict[str, list], repeats: int,
                    warmup: int = 8) -> Dict[str, float]:
    """Median seconds of forward + backward of each loss module over the
    inputs it got in a step (:func:`capture_loss_calls`). Each repeat adds
    fresh noise of the scores' own spread (a score memory of identical
    copies would be all ties); ``warmup`` repeats fill a memory untimed."""
    modules = _loss_modules(model)
    out = {}
    for name, inputs in calls.items():
        device = inputs[0][0].device
        times = []
        for i in range(repeats + warmup):
            leaves = [(score + torch.randn_like(score) * score.float().std()
                       .to(score.dtype)).requires_grad_(True)
                      for score, *_ in inputs]
            sync(device)
            t0 = time.perf_counter()
            for leaf, (_, args, kwargs, method) in zip(leaves, inputs):
                call = getattr(modules[name], method)
                _summed(call(leaf, *args, **kwargs)).backward()
            sync(device)
            if i >= warmup:
                times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times)
    return out


def compile_losses(model, backend: str = 'inductor') -> List[str]:
    """Puts each classification loss's ``forward`` (and ``terms``) under
    ``torch.compile`` (``dynamic=True``, ``backend``); returns the module
    names."""
    names = []
    for name, m in _loss_modules(model).items():
        for method in _entry_points(m):
            setattr(m, method, torch.compile(getattr(m, method),
                                             dynamic=True, backend=backend))
        names.append(name)
    return names


def share_row(config: str, device: torch.device, size: Sequence[int],
              steps: int, repeats: int,
              compile_backend: Optional[str] = None,
              warmup: int = 8) -> dict:
    """The step time of ``config``'s detector on a random batch and each
    classification loss's forward + backward time (after ``warmup`` calls
    that fill a score memory) and share of that step; with
    ``compile_backend``, the losses run under ``torch.compile``."""
    model, _ = build_detector(config, device)
    data = detector_batch(model, size)
    calls = capture_loss_calls(model, data)
    row = dict(config=config, size=list(size))
    if compile_backend:
        row['compiled'] = compile_losses(model, compile_backend)
        row['compile_backend'] = compile_backend
    row.update(step_time(model, data, steps))
    row['loss_cls_s'] = loss_calls_time(model, calls, repeats, warmup)
    row['share_of_step'] = {name: s / row['step_s']
                            for name, s in row['loss_cls_s'].items()}
    row['scores_shape'] = {name: [list(c[0].shape) for c in inputs]
                           for name, inputs in calls.items()}
    return row


def amp_row(config: str, device: torch.device, size: Sequence[int],
            steps: int) -> dict:
    """One ``config`` training step under fp16 autocast with a GradScaler:
    its time, whether its losses were finite, the scale."""
    model, _ = build_detector(config, device)
    row = dict(config=config, size=list(size))
    row.update(step_time(model, detector_batch(model, size), steps,
                         amp=True))
    return row
