"""The pieces of the speed run (``tools/analysis_tools/
benchmark_rank_losses.py``): timing on any device, a plan of items run in
worker processes (``python -m rankloss_lab.speed_run --worker FACTORY
ARGS``) within a time budget, detector training steps (eager, with
compiled losses, under AMP) and the targets each row is held to.
"""
import contextlib
import importlib.util
import json
import logging
import os
import os.path as osp
import select
import statistics
import subprocess
import sys
import threading
import time
import traceback
import types
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

from rankloss_lab.paths import ROOT
from rankloss_lab.run_logs import machine_name
from rankloss_lab.runner import Progress, clock

__all__ = ['FORMAT', 'SECTIONS', 'TARGETS', 'sync', 'PeakMemory', 'time_it',
           'warm_up', 'timing_check', 'compiled_frames', 'device_label',
           'device_healthy', 'Plan', 'worker_command', 'serve',
           'build_detector', 'detector_batch', 'train_step', 'step_time',
           'capture_loss_calls', 'summed_loss', 'loss_calls_time',
           'compile_losses', 'amp_scaler', 'share_row', 'roi_align_row',
           'evaluate_targets']

#: The ``format`` of a speed-run JSON; its sections are lists of rows.
FORMAT = 'speed-run/2'
#: The sections of a speed-run JSON, in the order they run.
SECTIONS = ('lengths', 'per_step', 'step_share', 'amp', 'per_step_compile',
            'step_share_compile')


def sync(device: torch.device) -> None:
    """Waits for ``device`` (a no-op on CPU)."""
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def compiled_frames() -> int:
    """Frames ``torch.compile`` has compiled in this process so far."""
    utils = sys.modules.get('torch._dynamo.utils')
    return int(utils.counters['frames']['total']) if utils else 0


class PeakMemory:
    """Peak memory above the level at entry: CUDA allocator stats, or the
    process RSS sampled every millisecond (an estimate from below)."""

    def __init__(self, device: torch.device):
        self.device, self.peak = device, 0

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


def warm_up(fn: Callable[[], object], device: torch.device, calls: int = 1,
            max_calls: int = 12) -> dict:
    """Calls ``fn`` ``calls`` times, then on until a call compiles nothing
    (at most ``max_calls``): ``warmup_calls`` and ``warmup_s``."""
    start, done = time.perf_counter(), 0
    while True:
        before = compiled_frames()
        fn()
        sync(device)
        done += 1
        if done >= max_calls or (done >= calls and
                                 compiled_frames() == before):
            return dict(warmup_calls=done,
                        warmup_s=time.perf_counter() - start)


def timing_check(n: int) -> dict:
    """``recompiles``: ``n`` compiles during timed calls; with any,
    ``invalid`` (the time is not the compiled code's)."""
    out = dict(recompiles=n)
    if n:
        out['invalid'] = f'{n} compile(s) during the timed calls'
    return out


def _timed(fn: Callable[[], object], device: torch.device, repeats: int,
           min_time: float = 0.0) -> Tuple[List[float], dict]:
    """Wall times of ``repeats`` calls of ``fn`` at least (and on until
    ``min_time`` seconds), the device synchronised around each, and
    :func:`timing_check`'s fields."""
    frames, times = compiled_frames(), []
    start = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - start < min_time:
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t0)
    return times, timing_check(compiled_frames() - frames)


def time_it(fn: Callable[[], None], device: torch.device, repeats: int,
            min_time: float = 0.0, warmup: int = 1) -> Dict[str, float]:
    """Median wall time of ``fn`` after :func:`warm_up` (``warmup``
    calls at least), its peak memory (measured on a separate call) and
    :func:`timing_check`'s fields."""
    out = warm_up(fn, device, warmup)
    with PeakMemory(device) as mem:
        fn()
        sync(device)
    times, check = _timed(fn, device, repeats, min_time)
    out.update(median_s=statistics.median(times), min_s=min(times),
               runs=len(times), peak_mem_mb=mem.peak / 2**20, **check)
    return out


def device_label(device: torch.device) -> str:
    """The device's name: ``torch.cuda.get_device_name`` on CUDA, the CPU
    model otherwise."""
    if device.type == 'cuda':
        return torch.cuda.get_device_name(device)
    if torch.cuda.is_available():  # machine_name() names the GPU
        return 'CPU'
    return machine_name().rsplit(', torch', 1)[0]


def device_healthy(device: torch.device) -> bool:
    """Whether ``device`` still runs a kernel and reads back (a device-side
    assert fails every later call on a CUDA context)."""
    try:
        ok = float((torch.ones(2, device=device) + 1).sum()) == 4.0
        sync(device)
        return ok
    except Exception:  # noqa: BLE001 (any failure: a new worker)
        return False


#: Seconds a worker takes to start until a run has measured its own: a
#: guess for a GPU machine (5 to 15 s on a busy 2-core CPU).
WORKER_START_S = 8.0


class Plan:
    """Items run one after the other within ``budget_s`` seconds on
    ``device``, each in a worker process (or, without a worker command,
    in this process); only the items of ``sections`` are added.

    An item is ``(section, name, fn, expect_s, isolated)``: ``fn()``
    returns the row's fields; ``expect_s``: its expected seconds,
    compile warm-up included; an ``isolated`` item gets a worker of its
    own. A failing item gives a row with ``error``. Before each item the
    budget is judged from the time spent and the item's expected seconds
    (and a worker start), scaled by the finished items' pace; an item
    that does not fit is listed under ``skipped``. An item is stopped
    with its worker past :attr:`overrun` times its expected seconds at
    that pace (at least :attr:`min_limit_s`) or :attr:`grace_s` past the
    budget. A line after each item gives the progress and the ETA.
    """

    #: Seconds an item may run past the budget before it is stopped.
    grace_s = 30.0
    #: An item may run this many times its expected seconds ...
    overrun = 4.0
    #: ... or this many seconds, whichever is more.
    min_limit_s = 60.0

    def __init__(self, budget_s: float, device='cpu',
                 sections: Sequence[str] = SECTIONS) -> None:
        self.budget_s = float(budget_s)
        self.device = torch.device(device)
        self.sections = tuple(sections)
        self.items: List[Tuple[str, str, Callable[[], dict], float,
                               bool]] = []
        self.fields: List[dict] = []

    def healthy(self) -> bool:
        """Whether the device still works (:func:`device_healthy`)."""
        return device_healthy(self.device)

    def add(self, section: str, name: str, fn: Callable[[], dict],
            expect_s: float = 1.0, isolated: bool = False, **fields) -> None:
        """One item; ``fields`` go into its row whether it runs or fails."""
        if section not in SECTIONS:
            raise ValueError(f'Plan.add: unknown section {section!r}')
        if section not in self.sections:
            return
        self.items.append((section, name, fn, float(expect_s),
                           bool(isolated)))
        self.fields.append(fields)

    def expected_s(self, start_s: float = WORKER_START_S) -> float:
        """Every item's ``expect_s`` plus a worker start (``start_s``)
        for the first item, each isolated one and the one after it."""
        total, fresh = 0.0, True
        for *_, expect_s, isolated in self.items:
            total += expect_s + (start_s if fresh or isolated else 0.0)
            fresh = isolated
        return total

    def run(self, result: dict,
            worker: Optional[Sequence[str]] = None) -> dict:
        """Runs the items (in workers started with the command ``worker``
        of :func:`worker_command`) into ``result``'s sections."""
        for section in SECTIONS + ('skipped', ):
            result.setdefault(section, [])
        result['expected_s'] = self.expected_s()
        progress = Progress([item[3] for item in self.items], prefix='    ')
        start, spent_expected, starts = time.perf_counter(), 0.0, []
        current: Optional[_Worker] = None
        try:
            for index, ((section, name, fn, expect_s, isolated),
                        fields) in enumerate(zip(self.items, self.fields)):
                elapsed = time.perf_counter() - start
                pace = max(1.0, elapsed / spent_expected) if spent_expected \
                    else 1.0
                new = worker is not None and (current is None or isolated)
                start_s = (max(starts) if starts else WORKER_START_S) \
                    if new else 0.0
                need = (expect_s + start_s) * pace
                if elapsed + need > self.budget_s:
                    result['skipped'].append(dict(
                        section=section, name=name, **fields,
                        reason=f'time budget: {clock(elapsed)} spent of '
                        f'{clock(self.budget_s)}, about {need:.0f} s more '
                        'needed'))
                    progress.step(f'{section}: {name} skipped (budget)', 0.0)
                    continue
                t0 = time.perf_counter()
                limit = min(max(self.budget_s - elapsed - start_s, 5.0) +
                            self.grace_s,
                            max(self.overrun * expect_s * pace,
                                self.min_limit_s))
                if worker is None:
                    row, alive = _run_item(fn), True
                else:
                    if new and current is not None:
                        current.close()
                        current = None
                    try:
                        if new:
                            current = _Worker(worker)
                            starts.append(current.start_s)
                        row, alive = current.run(index, limit)
                    except RuntimeError as error:  # no worker started
                        row, alive = dict(error=str(error)), False
                    if (isolated or not alive) and current is not None:
                        current.close()
                        current = None
                took = time.perf_counter() - t0
                result[section].append(dict(name=name, **fields, **row,
                                            item_s=took))
                spent_expected += expect_s + start_s
                progress.step(f'{section}: {name}', took)
        finally:
            if current is not None:
                current.close()
        result['worker_starts_s'] = starts
        result['elapsed_s'] = time.perf_counter() - start
        return result


def _run_item(fn: Callable[[], dict]) -> dict:
    """``fn()``'s fields, or ``error`` (the exception's type and text) and
    ``where``: its last 3 frames, ``file:line function``."""
    try:
        return fn()
    except Exception as error:  # noqa: BLE001 (recorded in the JSON)
        text = str(error).strip().splitlines()
        frames = traceback.extract_tb(error.__traceback__)[-3:]
        return dict(error=f'{type(error).__name__}: '
                    f'{text[0][:300] if text else ""}',
                    where=[f'{_short(f.filename)}:{f.lineno} {f.name}'
                           for f in frames])


def _short(path: str) -> str:
    path = path.split('site-packages' + os.sep)[-1]
    return osp.relpath(path, ROOT) if path.startswith(ROOT) else path


def worker_command(factory: str, **kwargs) -> List[str]:
    """The command of a worker whose plan is ``factory(**kwargs)``
    (``factory``: ``'path/to/file.py:function'``; ``kwargs``: JSON)."""
    return [sys.executable, '-m', 'rankloss_lab.speed_run', '--worker',
            factory, json.dumps(kwargs)]


def _factory(spec: str) -> Callable[..., Plan]:
    where, _, name = spec.rpartition(':')
    found = importlib.util.spec_from_file_location('_speed_run_plan', where)
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return getattr(module, name)


class _Worker:
    """A worker process of :meth:`Plan.run` (:func:`serve`)."""

    def __init__(self, command: Sequence[str]) -> None:
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(list(command), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        reply = self._reply(600.0)
        if not reply or not reply.get('ready'):
            self.close()
            raise RuntimeError(f'speed-run worker {command} did not start '
                               f'(exit code {self.proc.returncode})')
        self.start_s = time.perf_counter() - t0

    def _reply(self, timeout_s: float) -> Optional[dict]:
        """The next line as a dict; ``{}`` when the worker ended, None
        after ``timeout_s`` without a line."""
        if not select.select([self.proc.stdout], [], [], timeout_s)[0]:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {}

    def run(self, index: int, limit_s: float) -> Tuple[dict, bool]:
        """Item ``index``'s fields and whether this worker can go on."""
        try:
            self.proc.stdin.write(f'{index}\n')
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # ended before: the reply below is {}
        reply = self._reply(limit_s)
        if reply is None:
            return dict(error=f'stopped: ran past its limit of '
                        f'{limit_s:.0f} s; its worker was ended'), False
        if 'row' not in reply:
            return dict(error='the worker ended during the item (exit code '
                        f'{self.proc.wait()}: a crash or a fatal device '
                        'error)'), False
        row = reply['row']
        if not reply['healthy']:
            row['device_failed'] = ('the device failed after this item; the '
                                    'next item runs in a new worker')
        return row, reply['healthy']

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()


def serve(factory: str, kwargs: str) -> None:
    """A worker's loop: builds ``factory(**json.loads(kwargs))`` and runs
    the items whose indices come on stdin, one JSON line each on stdout
    (the items' prints go to stderr), until the device fails."""
    channel = os.fdopen(os.dup(1), 'w')
    os.dup2(2, 1)

    def send(message: dict) -> None:  # a value JSON lacks: its str()
        channel.write(json.dumps(message, default=str) + '\n')
        channel.flush()

    plan = _factory(factory)(**json.loads(kwargs))
    send(dict(ready=True))
    for line in sys.stdin:
        row = _run_item(plan.items[int(line)][2])
        healthy = 'error' not in row or plan.healthy()
        send(dict(row=row, healthy=healthy))
        if not healthy:
            return


# --- detector training steps on random data ---


def build_detector(config: str, device: torch.device):
    """The model of ``config`` (from the repository root) with random
    weights, in train mode on ``device``, and its config."""
    from mmengine.config import Config
    from mmengine.logging import MMLogger
    from mmengine.registry import init_default_scope

    from mmdet.registry import MODELS
    cfg = Config.fromfile(osp.join(ROOT, config))
    cfg.model.backbone.init_cfg = None
    init_default_scope('mmdet')
    model = MODELS.build(cfg.model)
    logger = MMLogger.get_current_instance()
    level = logger.level
    logger.setLevel(logging.WARNING)  # not every parameter's init
    try:
        model.init_weights()
    finally:
        logger.setLevel(level)
    _apply_fp32_logits_hooks(cfg, model)
    return model.to(device).train(), cfg


def _apply_fp32_logits_hooks(cfg, model) -> None:
    """What the config's ``RankLogitsFp32Hook`` does before a run."""
    from mmdet_rankloss.engine.precision import RankLogitsFp32Hook
    for hook in cfg.get('custom_hooks', []):
        if hook.get('type') == 'RankLogitsFp32Hook':
            args = {k: v for k, v in hook.items()
                    if k not in ('type', 'priority')}
            RankLogitsFp32Hook(**args).before_run(
                types.SimpleNamespace(model=model))


def detector_batch(model, size: Sequence[int], images: int = 2) -> dict:
    """A random batch (``images`` x ``size`` = (H, W), 4 boxes each) through
    the model's data preprocessor."""
    from mmengine.structures import InstanceData

    from mmdet.structures import DetDataSample
    head = getattr(model, 'bbox_head', None) or model.roi_head.bbox_head
    num_classes, g = head.num_classes, torch.Generator().manual_seed(0)
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
            labels=torch.randint(0, num_classes, (4, ), generator=g))
        samples.append(s)
    return model.data_preprocessor(dict(inputs=inputs, data_samples=samples),
                                   True)


def amp_scaler(device: torch.device):
    """A GradScaler for ``device`` (``torch.amp``'s where it exists)."""
    if hasattr(torch.amp, 'GradScaler'):
        return torch.amp.GradScaler(device.type)
    return torch.cuda.amp.GradScaler()


def train_step(model, data, optimizer, scaler=None) -> torch.Tensor:
    """One SGD step on the summed losses, returned; with ``scaler``, under
    fp16 autocast and the scaler, as ``--amp``'s ``AmpOptimWrapper``."""
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


def step_time(model, data, steps: int, amp: bool = False,
              warmup: int = 1) -> dict:
    """Median seconds of ``steps`` training steps after :func:`warm_up`
    (``warmup`` steps at least), with :func:`timing_check`'s fields; under
    ``amp`` also whether every loss was finite and the final scale."""
    device = next(model.parameters()).device
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-5, momentum=0.9)
    scaler = amp_scaler(device) if amp else None
    out = warm_up(lambda: train_step(model, data, optimizer, scaler), device,
                  warmup)
    totals = []  # on the device, read after the timed steps
    times, check = _timed(lambda: totals.append(
        train_step(model, data, optimizer, scaler)), device, steps)
    out.update(step_s=statistics.median(times), steps=len(times), **check)
    if amp:
        finite = torch.isfinite(torch.stack(totals)).all()
        out.update(loss_finite=bool(finite),
                   grad_scale=float(scaler.get_scale()))
    return out


def _loss_modules(model) -> Dict[str, torch.nn.Module]:
    """The classification losses of the model's heads, by module name."""
    return {name: m for name, m in model.named_modules()
            if name.endswith('loss_cls') and name.count('loss_cls') == 1}


def _entry_points(module) -> List[str]:
    """The methods a head calls on a loss: ``forward`` and ``terms``."""
    return ['forward'] + (['terms'] if hasattr(module, 'terms') else [])


def capture_loss_calls(model, data) -> Dict[str, list]:
    """The inputs each classification loss gets in one forward pass:
    ``{module name: [(scores, args, kwargs, method), ...]}``."""
    calls, inside, modules = {}, [], _loss_modules(model)

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


def summed_loss(out) -> torch.Tensor:
    """A loss module's output summed, a dict's as MMEngine sums it."""
    if isinstance(out, dict):
        out = sum(v.sum() for k, v in out.items()
                  if 'loss' in k and isinstance(v, torch.Tensor))
    return out.sum()


def loss_calls_time(model, calls: Dict[str, list], repeats: int,
                    warmup: int = 8) -> Tuple[Dict[str, float], int]:
    """Median seconds of forward + backward of each loss module over the
    inputs it got in a step (:func:`capture_loss_calls`), and the compiles
    during the timed repeats, after :func:`warm_up` (``warmup`` repeats at
    least). Each repeat adds fresh noise of the scores' own spread (a
    score memory of identical copies would be all ties)."""
    modules = _loss_modules(model)
    out, recompiles = {}, 0
    for name, inputs in calls.items():
        device = inputs[0][0].device

        def repeat() -> float:
            leaves = [(score + torch.randn_like(score) * score.float().std()
                       .to(score.dtype)).requires_grad_(True)
                      for score, *_ in inputs]
            sync(device)
            t0 = time.perf_counter()
            for leaf, (_, args, kwargs, method) in zip(leaves, inputs):
                call = getattr(modules[name], method)
                summed_loss(call(leaf, *args, **kwargs)).backward()
            sync(device)
            return time.perf_counter() - t0

        warm_up(repeat, device, warmup)
        frames = compiled_frames()
        out[name] = statistics.median(repeat() for _ in range(repeats))
        recompiles += compiled_frames() - frames
    return out, recompiles


def compile_losses(model, backend: str = 'inductor') -> List[str]:
    """Puts each classification loss's ``forward`` (and ``terms``) under
    ``torch.compile(dynamic=True)``; returns the module names."""
    names = []
    for name, m in _loss_modules(model).items():
        for method in _entry_points(m):
            setattr(m, method, torch.compile(getattr(m, method),
                                             dynamic=True, backend=backend))
        names.append(name)
    return names


def share_row(config: str, device: torch.device, size: Sequence[int],
              steps: int, repeats: int = 0,
              compile_backend: Optional[str] = None, warmup: int = 8,
              amp: bool = False) -> dict:
    """The step time of ``config``'s detector on a random batch and each
    classification loss's forward + backward time and share of it, after
    ``warmup`` untimed calls at least (:func:`warm_up`); with
    ``compile_backend``, the losses under ``torch.compile``. With ``amp``,
    the step alone under fp16 autocast (:func:`step_time`) and, for a RoI
    head, the dtypes mmcv's RoIAlign got (``roi_align_inputs``)."""
    model, _ = build_detector(config, device)
    data = detector_batch(model, size)
    row = dict(config=config, size=list(size))
    if amp:
        seen, hooks = _roi_align_inputs(model)
        row.update(step_time(model, data, steps, amp=True))
        for hook in hooks:
            hook.remove()
        if hooks:
            row['roi_align_inputs'] = sorted(seen)
        return row
    calls = capture_loss_calls(model, data)
    if compile_backend:
        row['compiled'] = compile_losses(model, compile_backend)
        row['compile_backend'] = compile_backend
    row.update(step_time(model, data, steps, warmup=warmup))
    row['loss_cls_s'], recompiles = loss_calls_time(model, calls, repeats,
                                                    warmup)
    row.update(timing_check(row['recompiles'] + recompiles))
    row['share_of_step'] = {name: s / row['step_s']
                            for name, s in row['loss_cls_s'].items()}
    row['scores_shape'] = {name: [list(c[0].shape) for c in inputs]
                           for name, inputs in calls.items()}
    return row


def _roi_align_inputs(model) -> Tuple[set, list]:
    """(the set of (features, RoIs) dtypes every mmcv ``RoIAlign`` of
    ``model`` gets, the hooks that record them)."""
    from mmcv.ops import RoIAlign
    seen: set = set()
    hooks = [m.register_forward_pre_hook(
        lambda _, args: seen.add(' / '.join(
            str(a.dtype).replace('torch.', '') for a in args[:2])))
        for m in model.modules() if isinstance(m, RoIAlign)]
    return seen, hooks


def roi_align_row(device: torch.device, repeats: int, rois: int = 1024,
                  channels: int = 256, size: Sequence[int] = (200, 336)
                  ) -> dict:
    """mmcv's ``RoIAlign`` as a Faster R-CNN RoI head runs it under fp16
    autocast (7 x 7, sampling ratio 0): fp16 features of one FPN level
    (stride 4, ``size``), ``rois`` fp16 boxes over 2 images. Forward +
    backward time, the output dtype, the largest difference to the fp32
    op relative to its largest output, whether the gradient is finite."""
    from mmcv.ops import RoIAlign
    layer = RoIAlign(7, spatial_scale=0.25, sampling_ratio=0)
    g = torch.Generator().manual_seed(0)
    h, w = size
    extent = torch.tensor([w * 4.0, h * 4.0])
    xy = torch.rand(rois, 2, generator=g) * extent * 0.7
    wh = 16 + torch.rand(rois, 2, generator=g) * extent * 0.3
    boxes = torch.cat([(torch.arange(rois) % 2)[:, None].float(), xy,
                       xy + wh], 1).half().to(device)
    feats = torch.randn(2, channels, h, w, generator=g).half().to(device)
    leaf = feats.clone().requires_grad_(True)

    def step():
        leaf.grad = None
        with torch.autocast(device.type, dtype=torch.float16):
            out = layer(leaf, boxes)
        out.float().sum().backward()

    row = time_it(step, device, repeats)
    with torch.autocast(device.type, dtype=torch.float16):
        half = layer(feats, boxes)
    full = layer(feats.float(), boxes.float())
    row.update(out_dtype=str(half.dtype).replace('torch.', ''),
               rois=rois, feature_shape=list(feats.shape),
               max_rel_diff=float((half.float() - full).abs().max() /
                                  full.abs().max()),
               grad_finite=bool(torch.isfinite(leaf.grad).all()))
    return row


# --- the targets a GPU run is held to ---


def _rows(result: dict, section: str, **match) -> List[dict]:
    return [r for r in result.get(section, [])
            if all(r.get(k) == v for k, v in match.items())]


def _over(result: dict, key: str, other: str,
          lengths: Optional[Sequence[int]] = None) -> List[tuple]:
    """(row of ``key``, its time over ``other``'s at the same length)."""
    base = {r['length']: r.get('median_s')
            for r in _rows(result, 'lengths', loss=other)}
    return [(r, r['median_s'] / base[r['length']]
             if r.get('median_s') and base.get(r['length']) else None)
            for r in _rows(result, 'lengths', loss=key)
            if lengths is None or r['length'] in lengths]


def _seconds(result: dict, section: str, case: str) -> List[tuple]:
    return [(r, r.get('median_s')) for r in _rows(result, section,
                                                   case=case)]


def _atss_shares(result: dict) -> List[tuple]:
    return [(r, sum(r['share_of_step'].values()) if 'share_of_step' in r
             else None) for r in result.get('step_share', [])
            if str(r.get('detector', '')).startswith('ATSS') and
            r.get('loss') != 'focal']


#: id -> (text, limit, unit, rows): ``rows(result)`` gives (row, value or
#: None) pairs; a row passes when its value is at most the limit (below it
#: for ``ap_vs_naive``) and it is not ``invalid``.
TARGETS: Dict[str, tuple] = {
    'ap_sort_equivalents': (
        'RaMBO AP loss (rambo_ap_loss) at most 3 sort-equivalents at 1M and '
        '10M scores', 3.0, 'sorts',
        lambda r: _over(r, 'rambo_ap', 'sort', r.get('target_lengths'))),
    'ap_vs_naive': (
        'RaMBO AP loss faster than naive Algorithm 1 at every length', 1.0,
        'x naive', lambda r: _over(r, 'rambo_ap', 'naive_alg1')),
    'rambo_step_eager': (
        'RaMBOAPLoss at most 1 ms per Faster R-CNN step (2 x 512 RoIs), '
        'eager', 1e-3, 's', lambda r: _seconds(r, 'per_step', 'rambo_roi')),
    'rambo_step_compiled': (
        'RaMBOAPLoss at most 0.3 ms per Faster R-CNN step, compiled', 3e-4,
        's', lambda r: _seconds(r, 'per_step_compile', 'rambo_roi')),
    'dense_share_atss': (
        'every dense rank loss at most 5 % of an ATSS R50 step', 0.05,
        'share', _atss_shares),
    'recall_step': (
        'RaMBORecallLoss at most 1 ms per step at B 256', 1e-3, 's',
        lambda r: _seconds(r, 'per_step', 'recall')),
}


def evaluate_targets(result: dict) -> List[dict]:
    """Holds the rows to :data:`TARGETS`: each row a target applies to
    gets ``targets[id] = {value, limit, passed}``; ``result['targets']``
    (returned) lists every target's ``verdict``: 'pass', 'fail' or 'not
    run' (no row)."""
    verdicts = []
    for key, (text, limit, unit, rows) in TARGETS.items():
        passed = []
        for row, value in rows(result):
            ok = (value is not None and 'invalid' not in row and
                  (value < limit if key == 'ap_vs_naive' else
                   value <= limit))
            row.setdefault('targets', {})[key] = dict(value=value,
                                                      limit=limit, passed=ok)
            passed.append(ok)
        verdicts.append(dict(
            id=key, text=text, limit=limit, unit=unit, rows=len(passed),
            passed=sum(passed), verdict='not run' if not passed else
            'pass' if all(passed) else 'fail'))
    result['targets'] = verdicts
    return verdicts


if __name__ == '__main__' and sys.argv[1:2] == ['--worker']:
    from rankloss_lab.speed_run import serve as _serve
    _serve(*sys.argv[2:4])
