"""Benchmark the rank losses: forward+backward time and peak memory.

Times, in one run on this machine:

* the AP loss (``average_precision_loss``, 10 % positives) at lengths
  100k, 1M, 10M (``--lengths``), next to one ``torch.sort`` of the same
  length (the floor) and a naive Algorithm 1 written from the paper with
  double-argsort ranks for both rankers of Eq. 21 (what the public
  prototype does), on 1 CPU thread, on all CPU threads and on CUDA when
  present;
* the detection loss ``RaMBOAPLoss`` at Faster R-CNN scale (2 images x 512
  RoIs x 21 classes, tau = 7);
* the retrieval losses at their papers' batch sizes (RaMBO recall with
  memory 3 at 128/256/512, FastAP, SRT, AUC, triplet, SoDeep sorters);
* with ``--error-driven-lengths``: Rank & Sort, aLRP and error-driven AP
  (``error_driven_loss``, 500 positives) next to ``torch.sort`` and a
  naive dense (positives x scores) version written from the papers, timed
  at lengths up to ``--naive-max`` (``--only-error-driven``: that table
  alone, on 1 CPU thread).

Writes ``<out>.json`` and ``<out>.md``. Numbers are measurements of this
machine, not pass/fail criteria: ``--smoke`` runs tiny sizes for CI. After
every case a line gives the cases done, the time spent and an ETA (an AP
case is weighted by its length, 1 per 100k; every other case weighs 1).

    python tools/analysis_tools/benchmark_rank_losses.py --out work_dirs/bench/bench
"""
import argparse
import json
import os
import statistics
import sys
import threading
import time
from typing import Callable, Dict, List, Optional

import torch

import mmdet_rankloss  # noqa: F401  (registers the losses)
from mmdet.registry import MODELS
from mmdet_rankloss.losses import average_precision_loss, error_driven_loss
from experiments.run_logs import machine_name
from experiments.runner import Progress


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
            self.peak = torch.cuda.max_memory_allocated(self.device) - self.base
        else:
            self._stop = True
            self._thread.join()
            self.peak = max(self._max, self._rss()) - self.base
        return False


def _sync(device: torch.device) -> None:
    if device.type == 'cuda':
        torch.cuda.synchronize(device)


def time_it(fn: Callable[[], None], device: torch.device, repeats: int,
            min_time: float = 0.0) -> Dict[str, float]:
    """Median wall time of ``fn`` after one warm-up call, and its peak
    memory (measured on a separate call)."""
    fn()
    _sync(device)
    with PeakMemory(device) as mem:
        fn()
        _sync(device)
    times = []
    start = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return dict(
        median_s=statistics.median(times),
        min_s=min(times),
        runs=len(times),
        peak_mem_mb=mem.peak / 2**20)


# --------------------------------------------------------------------------
# Naive Algorithm 1, written here from the paper (not from any public code):
# ranks by a double argsort, both rankers of Eq. 21 differentiated.


def _double_argsort_rank(y: torch.Tensor) -> torch.Tensor:
    return (torch.argsort(torch.argsort(-y, dim=-1), dim=-1) + 1).to(y.dtype)


class _NaiveBlackboxRank(torch.autograd.Function):

    @staticmethod
    def forward(ctx, y, lambda_val):
        r = _double_argsort_rank(y)
        ctx.save_for_backward(y, r)
        ctx.lambda_val = lambda_val
        return r

    @staticmethod
    def backward(ctx, grad):
        y, r = ctx.saved_tensors
        r_pert = _double_argsort_rank(y + ctx.lambda_val * grad)
        return -(r - r_pert) / ctx.lambda_val, None


def naive_ap_loss(scores: torch.Tensor, labels: torch.Tensor,
                  lambda_val: float, margin: float) -> torch.Tensor:
    pos = labels.bool()
    shifted = scores + torch.where(pos, -margin / 2, margin / 2)
    rank_all = _NaiveBlackboxRank.apply(shifted, lambda_val)
    masked = torch.where(pos, shifted, torch.full_like(shifted, -1e30))
    rank_pos = _NaiveBlackboxRank.apply(masked, lambda_val)
    prec = (rank_pos / rank_all)[pos]
    return 1 - prec.mean()


# --------------------------------------------------------------------------
# Naive RS / aLRP / AP error-driven update, written here from the papers:
# the dense (positives x scores) relation matrix and the explicit primary
# terms L_ij. O(P n) memory: small n only.


class _NaiveErrorDriven(torch.autograd.Function):

    @staticmethod
    def forward(ctx, s, pos, delta, mode, quality, loc_error):
        s64 = s.detach().double()
        u = s64[pos]
        h = ((s64[None, :] - u[:, None]) / (2 * delta) + 0.5).clamp(0, 1)
        pos_cols = pos.nonzero().squeeze(1)
        num_pos = u.numel()
        h[torch.arange(num_pos), pos_cols] = 0  # j != i
        neg = ~pos
        nfp = (h * neg).sum(1)
        h_pp = h[:, pos_cols]
        rank_plus = 1 + h_pp.sum(1)
        rank = rank_plus + nfp
        value = (nfp / rank).mean()
        if mode == 'alrp':
            e = loc_error.double()
            err = (nfp + e + h_pp @ e) / rank
        else:
            err = nfp / rank
        L = (h * neg) * (err / nfp.clamp(min=1e-300))[:, None]  # (P, n)
        if mode == 'rs':
            y = quality.double()
            lower = h_pp * (y[None, :] < y[:, None])
            higher = h_pp * (y[None, :] >= y[:, None])
            current = ((1 - y) + h_pp @ (1 - y)) / rank_plus
            target = ((1 - y) + higher @ (1 - y)) / (1 + higher.sum(1))
            sort_err = current - target
            value = value + sort_err.mean()
            share = lower.sum(1).clamp(min=1e-300)
            L[:, pos_cols] += lower * (sort_err / share)[:, None]
        grad = L.sum(0) / num_pos
        grad[pos_cols] -= L.sum(1) / num_pos
        ctx.save_for_backward(grad.to(s.dtype))
        return value.to(s.dtype)

    @staticmethod
    def backward(ctx, g):
        grad, = ctx.saved_tensors
        return grad * g, None, None, None, None, None


def bench_error_driven(lengths: List[int], device: torch.device,
                       repeats: int, naive_max: int,
                       num_pos: int = 500) -> List[dict]:
    """RS, aLRP and AP error-driven updates: forward + backward of one
    ranking of ``n`` fp32 scores (``num_pos`` positives, scores N(0, 1):
    every negative within reach of a positive), over torch.sort."""
    rows = []
    for n in lengths:
        g = torch.Generator().manual_seed(n)
        scores = torch.randn(n, generator=g).to(device)
        pos = torch.zeros(n, dtype=torch.bool)
        pos[torch.randperm(n, generator=g)[:num_pos]] = True
        pos = pos.to(device)
        quality = torch.rand(num_pos, generator=g).to(device)
        leaf = scores.clone().requires_grad_(True)
        sort = time_it(lambda: torch.sort(scores), device, repeats)
        for mode, delta in (('rs', 0.5), ('alrp', 1.0), ('ap', 1.0)):

            def ours():
                leaf.grad = None
                error_driven_loss(leaf, pos, delta, mode, quality=quality,
                                  loc_error=quality)[0].backward()

            def naive():
                leaf.grad = None
                _NaiveErrorDriven.apply(leaf, pos, delta, mode, quality,
                                        quality).backward()

            row = dict(length=n, mode=mode, positives=num_pos, sort=sort,
                       ours=time_it(ours, device, repeats))
            row['ours_over_sort'] = row['ours']['median_s'] / sort['median_s']
            if n <= naive_max:
                row['naive'] = time_it(naive, device, repeats)
                row['naive_over_ours'] = (row['naive']['median_s'] /
                                          row['ours']['median_s'])
            rows.append(row)
            print(f"  {mode:>4} n={n:>11,}: sort "
                  f"{sort['median_s']*1e3:8.1f} ms  ours "
                  f"{row['ours']['median_s']*1e3:8.1f} ms "
                  f"({row['ours_over_sort']:.2f} sort-equivalents)" +
                  (f"  naive {row['naive']['median_s']*1e3:9.1f} ms"
                   if 'naive' in row else ''), flush=True)
    return rows


# --------------------------------------------------------------------------


def total_loss(out) -> torch.Tensor:
    """A loss module's output as one scalar: the tensor, or the sum of the
    dict entries whose key contains 'loss' (as MMEngine sums them)."""
    if isinstance(out, dict):
        return sum(v for k, v in out.items() if 'loss' in k)
    return out


def per_step(res: Dict[str, float], steps: int) -> Dict[str, float]:
    """Timings of a call that ran ``steps`` training steps, per step."""
    return {k: (v / steps if k.endswith('_s') else v) for k, v in res.items()}


def bench_ap(lengths: List[int], device: torch.device, repeats: int,
             naive_max: int, progress: Optional[Progress] = None
             ) -> List[dict]:
    rows = []
    for n in lengths:
        g = torch.Generator().manual_seed(n)
        scores = torch.randn(n, generator=g).to(device)
        labels = (torch.rand(n, generator=g) < 0.1).to(device)
        leaf = scores.clone().requires_grad_(True)

        def sort_only():
            torch.sort(scores)

        def ours():
            leaf.grad = None
            average_precision_loss(leaf, labels, 0.5, 0.15).backward()

        def naive():
            leaf.grad = None
            naive_ap_loss(leaf, labels, 0.5, 0.15).backward()

        row = dict(length=n, sort=time_it(sort_only, device, repeats),
                   ours=time_it(ours, device, repeats))
        if n <= naive_max:
            row['naive'] = time_it(naive, device, repeats)
        row['ours_over_sort'] = row['ours']['median_s'] / row['sort'][
            'median_s']
        if 'naive' in row:
            row['naive_over_ours'] = (row['naive']['median_s'] /
                                      row['ours']['median_s'])
        rows.append(row)
        print(f"  AP n={n:>11,}: sort {row['sort']['median_s']*1e3:9.2f} ms"
              f"  ours {row['ours']['median_s']*1e3:9.2f} ms"
              f" ({row['ours_over_sort']:.2f}x sort)" +
              (f"  naive {row['naive']['median_s']*1e3:9.2f} ms"
               f" ({row['naive_over_ours']:.2f}x ours)"
               if 'naive' in row else ''), flush=True)
        if progress:
            progress.step()
    return rows


def _retrieval_cases(smoke: bool) -> List[dict]:
    """Losses at their papers' batch sizes (embedding dim in brackets)."""
    small = smoke
    cases = []
    for b in ((32, ) if small else (128, 256, 512)):
        cases.append(dict(name='RaMBORecallLoss log, memory 3',
                          cfg=dict(type='RaMBORecallLoss', memory=3),
                          batch=b, dim=512, per_class=4, steps=4))
    # (name, config, batch, embedding dim, images per class): each paper's
    # own setting where it gives one
    paper = [
        ('FastAPLoss', dict(type='FastAPLoss'), 256, 512, 4),
        ('SoftRankThresholdLoss (18 classes x 4)',
         dict(type='SoftRankThresholdLoss'), 72, 128, 4),
        ('AUCLoss batch-hard', dict(type='AUCLoss'), 128, 128, 4),
        ('BatchHardTripletLoss',
         dict(type='BatchHardTripletLoss'), 128, 128, 4),
        ('WilcoxonLoss', dict(type='WilcoxonLoss'), 128, 128, 4),
    ]
    for arch in ('HandcraftedSorter', 'LSTMSorter', 'CNNSorter'):
        # B = 101: each row ranks the other 100 items, the sorter's length
        paper.append((f'SoDeepRecallLoss ({arch}, untrained)',
                      dict(type='SoDeepRecallLoss',
                           sorter=dict(type=arch, seq_len=100)), 101, 128,
                      1))
    for name, cfg, b, d, k in paper:
        # sorters rank rows of exactly their seq_len: keep their batch
        fixed = cfg['type'].startswith('SoDeep')
        cases.append(dict(name=name, cfg=cfg,
                          batch=b if fixed or not small else 32,
                          dim=d, per_class=k, steps=1))
    return cases


def bench_retrieval(device: torch.device, repeats: int, smoke: bool,
                    progress: Optional[Progress] = None) -> List[dict]:
    rows = []
    for case in _retrieval_cases(smoke):
        if case['cfg']['type'] not in MODELS.module_dict:
            # Every listed loss is part of the package; a missing one is a
            # bug that should fail loudly, not a row that quietly vanishes.
            raise KeyError(f"{case['cfg']['type']} is not registered")
        loss_fn = MODELS.build(case['cfg']).to(device)
        b, d = case['batch'], case['dim']
        g = torch.Generator().manual_seed(b)
        k = case['per_class']
        labels = (torch.arange(b) // k if k > 1 else torch.arange(b) % 20)
        labels = labels.to(device)
        embs = [
            torch.nn.functional.normalize(
                torch.randn(b, d, generator=g), dim=1).to(device)
            for _ in range(case['steps'])
        ]

        def step():
            # fill the memory first where the loss has one
            for e in embs:
                leaf = e.clone().requires_grad_(True)
                total_loss(loss_fn(leaf, labels)).backward()

        res = per_step(time_it(step, device, repeats), case['steps'])
        rows.append(dict(name=f"{case['name']}, B={b}, D={d}", batch=b,
                         dim=d, **res))
        print(f"  {rows[-1]['name']:<58} {res['median_s']*1e3:9.2f} ms/step",
              flush=True)
        if progress:
            progress.step()
    return rows


# The AP loss with each ranking back-end (RaMBOAPLoss ``ranker``); the
# sorter is an untrained BiLSTM of the pre-trained one's size (same cost).
DETECTION_RANKERS = (
    ('blackbox (Alg. 1)', None),
    ('sigmoid soft rank, t=1', dict(type='SigmoidRanker', temperature=1.0)),
    ('SoDeep BiLSTM sorter, d=100',
     dict(type='SorterRanker', sorter=dict(type='LSTMSorter', seq_len=100))),
)


def bench_detection(device: torch.device, repeats: int,
                    smoke: bool = False,
                    progress: Optional[Progress] = None) -> List[dict]:
    n, c = (2 * 64 if smoke else 2 * 512), 20
    g = torch.Generator().manual_seed(0)
    labels = torch.where(
        torch.rand(n, generator=g) < 0.25,
        torch.randint(0, c, (n, ), generator=g), torch.full((n, ), c))
    labels = labels.to(device)
    weights = torch.ones(n, device=device)
    # 8 steps fill the tau = 7 memory; a smoke run takes 2
    batches = [torch.randn(n, c + 1, generator=g).to(device) * 0.5
               for _ in range(2 if smoke else 8)]
    rows = []
    for ranker_name, ranker in DETECTION_RANKERS:
        loss_fn = MODELS.build(dict(type='RaMBOAPLoss', memory=7,
                                    ranker=ranker)).to(device)

        def step():  # after the warm-up call the memory is full
            for s in batches:
                leaf = s.clone().requires_grad_(True)
                total_loss(loss_fn(leaf, labels, weights,
                                   avg_factor=n)).backward()

        # the blackbox ranker is timed as often as asked; the others cost
        # seconds per step on a CPU, so 2 repeats
        res = per_step(
            time_it(step, device, repeats if ranker is None else
                    min(repeats, 2)), len(batches))
        name = (f'RaMBOAPLoss, 2x{n // 2} RoIs, {c}+1 classes, tau=7, '
                f'ranker: {ranker_name}')
        print(f"  {name}: {res['median_s']*1e3:.2f} ms/step", flush=True)
        rows.append(dict(name=name, **res))
        if progress:
            progress.step()
    return rows


def to_markdown(result: dict) -> str:
    lines = [f"Machine: {result['machine']}", '']
    if result.get('error_driven'):
        lines += [
            'RS / aLRP / AP error-driven update, forward+backward, '
            f"{result['error_driven'][0]['positives']} positives, CPU, 1 "
            'thread', '',
            '| loss | length | torch.sort | ours | ours / sort | naive dense '
            '| ours peak mem |', '|---|---:|---:|---:|---:|---:|---:|'
        ]
        for r in result['error_driven']:
            naive = (f"{r['naive']['median_s']*1e3:.1f} ms"
                     if 'naive' in r else 'not run')
            lines.append(
                f"| {r['mode']} | {r['length']:,} "
                f"| {r['sort']['median_s']*1e3:.1f} ms "
                f"| {r['ours']['median_s']*1e3:.1f} ms "
                f"| {r['ours_over_sort']:.2f} | {naive} "
                f"| {r['ours']['peak_mem_mb']:.0f} MB |")
        lines.append('')
    for setting, rows in result['ap'].items():
        lines += [
            f'AP loss forward+backward, 10 % positives, margin 0.15, '
            f'lambda 0.5 ({setting})', '',
            '| length | torch.sort | ours | ours / sort | naive Alg. 1 '
            '| naive / ours | ours peak mem |',
            '|---:|---:|---:|---:|---:|---:|---:|'
        ]
        for r in rows:
            naive = (f"{r['naive']['median_s']*1e3:.1f} ms"
                     if 'naive' in r else 'not run')
            ratio = (f"{r['naive_over_ours']:.2f}x"
                     if 'naive' in r else '-')
            lines.append(
                f"| {r['length']:,} | {r['sort']['median_s']*1e3:.1f} ms "
                f"| {r['ours']['median_s']*1e3:.1f} ms "
                f"| {r['ours_over_sort']:.2f}x | {naive} | {ratio} "
                f"| {r['ours']['peak_mem_mb']:.0f} MB |")
        lines.append('')
    for title, key in (('Detection loss per training step', 'detection'),
                       ('Retrieval losses per training step', 'retrieval')):
        if not result.get(key):
            continue
        lines += [f"{title} ({result['threads_other']} threads)", '',
                  '| loss | forward+backward | peak mem |', '|---|---:|---:|']
        for r in result[key]:
            lines.append(f"| {r['name']} | {r['median_s']*1e3:.2f} ms "
                         f"| {r['peak_mem_mb']:.0f} MB |")
        lines.append('')
    return '\n'.join(lines)


def main(argv: Optional[List[str]] = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--lengths', type=int, nargs='+',
                        default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument('--naive-max', type=int, default=10_000_000,
                        help='longest length the naive version is timed at')
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--smoke', action='store_true',
                        help='tiny sizes, for CI: checks the tool runs')
    parser.add_argument('--skip-others', action='store_true',
                        help='only the AP loss table')
    parser.add_argument('--error-driven-lengths', type=int, nargs='*',
                        default=[],
                        help='lengths for the RS / aLRP / AP error-driven '
                        'table, e.g. 1000000 3650000 (1 CPU thread)')
    parser.add_argument('--only-error-driven', action='store_true',
                        help='only the error-driven table')
    parser.add_argument('--devices', nargs='+',
                        choices=['cpu-1', 'cpu-all', 'cuda'],
                        default=['cpu-1', 'cpu-all', 'cuda'],
                        help='which AP-loss settings to time (cuda is '
                        'skipped when absent); e.g. --devices cuda for the '
                        'CUDA rows alone')
    parser.add_argument('--out', default='work_dirs/benchmark/rank_losses')
    args = parser.parse_args(argv)
    if args.smoke:
        args.lengths, args.repeats = [1_000, 10_000], 2
        if args.error_driven_lengths:
            args.error_driven_lengths = [2_000]
    if args.only_error_driven:
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        result = dict(machine=machine_name(), ap={}, threads_other=threads,
                      error_driven=bench_error_driven(
                          args.error_driven_lengths or [1_000_000, 3_650_000],
                          torch.device('cpu'), args.repeats, args.naive_max))
        torch.set_num_threads(threads)
        return _write(result, args.out)

    all_threads = torch.get_num_threads()
    result = dict(machine=machine_name(), ap={}, threads_other=all_threads)
    settings = []
    if 'cpu-1' in args.devices:
        settings.append(('CPU, 1 thread', torch.device('cpu'), 1))
    if 'cpu-all' in args.devices:
        settings.append((f'CPU, {all_threads} threads', torch.device('cpu'),
                         all_threads))
    if 'cuda' in args.devices:
        if torch.cuda.is_available():
            settings.append((f'CUDA, {torch.cuda.get_device_name()}',
                             torch.device('cuda'), all_threads))
        elif args.devices == ['cuda']:
            parser.error('--devices cuda: torch.cuda.is_available() is '
                         'False on this machine')
    weights = [n / 100_000 for n in args.lengths] * len(settings)
    if not args.skip_others:
        weights += [1.0] * (len(DETECTION_RANKERS) +
                            len(_retrieval_cases(args.smoke)))
    progress = Progress(weights, prefix='    ')
    for name, device, threads in settings:
        torch.set_num_threads(threads)
        print(f'{name}:', flush=True)
        result['ap'][name] = bench_ap(args.lengths, device, args.repeats,
                                      args.naive_max, progress)
    torch.set_num_threads(all_threads)
    if not args.skip_others:
        device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
        print(f'detection and retrieval losses ({device}):', flush=True)
        result['detection'] = bench_detection(device, args.repeats,
                                              args.smoke, progress)
        result['retrieval'] = bench_retrieval(device, args.repeats,
                                              args.smoke, progress)
    if args.error_driven_lengths:
        torch.set_num_threads(1)
        result['error_driven'] = bench_error_driven(
            args.error_driven_lengths, torch.device('cpu'), args.repeats,
            args.naive_max)
        torch.set_num_threads(all_threads)
    return _write(result, args.out)


def _write(result: dict, out: str) -> dict:
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + '.json', 'w') as f:
        json.dump(result, f, indent=1)
    with open(out + '.md', 'w') as f:
        f.write(to_markdown(result) + '\n')
    print(f'results written to {out}.json and {out}.md')
    return result


if __name__ == '__main__':
    sys.exit(0 if main() else 1)
