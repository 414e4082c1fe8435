"""Benchmark the rank losses: forward+backward time and peak memory.

Times, in one run on this machine (what each case is: docs/losses.md):

* the AP loss (10 % positives) at ``--lengths`` next to one ``torch.sort``
  of the same length and a naive Algorithm 1 with double-argsort ranks, on
  1 CPU thread, all CPU threads and CUDA when present;
* ``RaMBOAPLoss`` at Faster R-CNN scale (2 images x 512 RoIs x 21, tau 7);
* the retrieval losses at their papers' batch sizes;
* with ``--error-driven-lengths``: Rank & Sort, aLRP and error-driven AP
  next to ``torch.sort``, the bucketed losses of
  ``lab/rankloss_lab/bucketed_losses.py`` and a naive dense version, up to
  ``--naive-max`` (``--only-error-driven``: that table alone, 1 thread).

Writes ``<out>.json`` and ``<out>.md``: measurements of this machine, not
pass/fail criteria (``--smoke``: tiny sizes for CI). A line after every case
gives the cases done, the time spent and an ETA.

``--speed-run`` is the one command for a GPU (else the CPU), within the
default ``--budget-s 420`` (7 minutes; ``EXPECT_S`` holds what each item is
expected to take), each item in a worker process
(``rankloss_lab.speed_run.Plan``); its JSON's sections are
``rankloss_lab.speed_run.SECTIONS``, with the targets of each row, and
``<out>.md`` is the docs section (``lab/rankloss_lab/speed_tables.py``).
``tools/analysis_tools/evidence_tables.py --write`` puts the section made
from ``docs/evidence/gpu/speed_run.json`` into ``docs/losses.md``::

    python tools/analysis_tools/benchmark_rank_losses.py --speed-run \
        --out docs/evidence/gpu/speed_run
    python tools/analysis_tools/evidence_tables.py --write

    python tools/analysis_tools/benchmark_rank_losses.py \\
        --out work_dirs/bench/bench
"""
import argparse
import functools
import json
import os
import sys
import time
from typing import Callable, Dict, List, Optional

import torch

import mmdet_rankloss  # noqa: F401  (registers the losses)
from mmdet.registry import MODELS
from mmdet_rankloss.losses import error_driven_loss, rambo_ap_loss
from rankloss_lab import speed_run as sr, speed_tables
from rankloss_lab.bucketed_losses import PAPER_SECONDS_PER_ITER, bucketed_loss
from rankloss_lab.run_logs import machine_name
from rankloss_lab.runner import Progress
from rankloss_lab.speed_run import time_it

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
        r = 0.5 if mode == 'rs' else 1.0  # a positive's relation to itself
        rank_plus = r + h_pp.sum(1)
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
            current = (r * (1 - y) + h_pp @ (1 - y)) / rank_plus
            target = (r * (1 - y) + higher @ (1 - y)) / (r + higher.sum(1))
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


#: The error-driven losses and their default smoothing widths.
ERROR_DRIVEN = (('rs', 0.5), ('alrp', 1.0), ('ap', 1.0))
#: The modes the bucketed peer (lab/rankloss_lab/bucketed_losses.py) has.
BUCKETED = ('rs', 'ap')


def error_driven_inputs(n: int, device: torch.device,
                        num_pos: int = 500) -> dict:
    """``n`` N(0, 1) fp32 scores (every negative within reach of a
    positive), ``num_pos`` random positives, U(0, 1) labels / errors."""
    g = torch.Generator().manual_seed(n)
    scores = torch.randn(n, generator=g)
    pos = torch.zeros(n, dtype=torch.bool)
    pos[torch.randperm(n, generator=g)[:num_pos]] = True
    quality = torch.rand(num_pos, generator=g)
    leaf = scores.clone().to(device).requires_grad_(True)
    return dict(scores=scores.to(device), pos=pos.to(device),
                quality=quality.to(device), leaf=leaf, positives=num_pos)


def error_driven_case(x: dict, mode: str, delta: float,
                      version: str) -> Callable[[], None]:
    """Forward + backward of one ranking: ``version`` 'ours'
    (``error_driven_loss``), 'bucketed' (the peer, hard step) or 'naive'
    (dense positives x scores)."""
    leaf, pos, quality = x['leaf'], x['pos'], x['quality']

    def ours():
        leaf.grad = None
        error_driven_loss(leaf, pos, delta, mode, quality=quality,
                          loc_error=quality)[0].backward()

    def bucketed():
        leaf.grad = None
        bucketed_loss(leaf, pos, mode, quality=quality).backward()

    def naive():
        leaf.grad = None
        _NaiveErrorDriven.apply(leaf, pos, delta, mode, quality,
                                quality).backward()

    return dict(ours=ours, bucketed=bucketed, naive=naive)[version]


def bench_error_driven(lengths: List[int], device: torch.device,
                       repeats: int, naive_max: int,
                       num_pos: int = 500) -> List[dict]:
    """RS, aLRP and AP error-driven updates: forward + backward of one
    ranking of ``n`` fp32 scores (``num_pos`` positives), over torch.sort,
    beside the bucketed peer (RS and AP) and the naive dense version (up to
    ``naive_max``)."""
    rows = []
    for n in lengths:
        x = error_driven_inputs(n, device, num_pos)
        sort = time_it(lambda: torch.sort(x['scores']), device, repeats)
        for mode, delta in ERROR_DRIVEN:
            versions = ['ours'] + (['bucketed'] if mode in BUCKETED else [])
            versions += ['naive'] if n <= naive_max else []
            row = dict(length=n, mode=mode, positives=num_pos, sort=sort)
            for version in versions:
                row[version] = time_it(
                    error_driven_case(x, mode, delta, version), device,
                    repeats)
            ours = row['ours']['median_s']
            row['ours_over_sort'] = ours / sort['median_s']
            for version in ('bucketed', 'naive'):
                if version in row:
                    row[f'{version}_over_ours'] = (
                        row[version]['median_s'] / ours)
            rows.append(row)
            print(f"  {mode:>4} n={n:>11,}: sort "
                  f"{sort['median_s']*1e3:8.1f} ms  ours {ours*1e3:8.1f} ms "
                  f"({row['ours_over_sort']:.2f} sort-equivalents)" + ''.join(
                      f"  {v} {row[v]['median_s']*1e3:9.1f} ms"
                      for v in ('bucketed', 'naive') if v in row),
                  flush=True)
    return rows


# --------------------------------------------------------------------------


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
            rambo_ap_loss(leaf, labels, 0.5, 0.15).backward()

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
                sr.summed_loss(loss_fn(leaf, labels)).backward()

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
                sr.summed_loss(loss_fn(leaf, labels, weights,
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


# --------------------------------------------------------------------------
# The speed run (--speed-run): every loss and peer at every length, the
# per-step costs, the shares of detector steps and AMP steps, in one JSON
# within a time budget (lab/rankloss_lab/speed_run.py).

#: (key, label) of the losses timed at each length.
LENGTH_LOSSES = (
    ('sort', 'torch.sort (the floor)'),
    ('rambo_ap', 'RaMBO AP loss (rambo_ap_loss, 10 % positives)'),
    ('naive_alg1', 'naive Algorithm 1 (double argsort)'),
    ('rs', 'Rank & Sort (ours)'),
    ('rs_bucketed', 'bucketed Rank & Sort (peer)'),
    ('ap_loss', 'AP-Loss, error-driven (ours)'),
    ('ap_loss_bucketed', 'bucketed AP-Loss (peer)'),
    ('alrp', 'aLRP (ours)'),
)
#: key -> (mode, delta, version) of the error-driven rows.
_ERROR_DRIVEN_KEYS = {
    'rs': ('rs', 0.5, 'ours'), 'rs_bucketed': ('rs', 0.5, 'bucketed'),
    'ap_loss': ('ap', 1.0, 'ours'),
    'ap_loss_bucketed': ('ap', 1.0, 'bucketed'),
    'alrp': ('alrp', 1.0, 'ours'),
}
_FRCNN_R50 = 'configs/rambo/faster-rcnn_r50_fpn_{}_1x_{}.py'
_ATSS_R50 = 'configs/dense/atss/atss_r50_fpn_{}_1x_coco.py'
_FRCNN_R18 = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_{}_16e_digitsvoc.py'
_ATSS_R18 = 'configs/dense/atss/atss_r18-w32_fpn_{}_16e_digitsvoc.py'
#: losses benchmarked on MMDetection's recipe (``_mmdet-1x_``: the focal
#: twin's model and anchors), not on their authors' (other anchors and
#: batch; aLRP at 512 px)
_MMDET_RECIPE = ('rank-sort', 'alrp')


def _r50(template: str, loss: str, *args) -> str:
    path = template.format(loss, *args)
    if loss in _MMDET_RECIPE:
        path = path.replace('_1x_', '_mmdet-1x_')
    return path


def detector_configs(smoke: bool) -> Dict[str, List[tuple]]:
    """(detector, loss, config) of the step-share, AMP and compile items:
    R50 on COCO-size images (Faster R-CNN with RaMBO alone has only a VOC
    config, 20 classes), or for a smoke run a few of the small DigitsVOC
    R18-w32 models, one of each kind of head."""
    if smoke:
        frcnn = ('Faster R-CNN R18-w32', 'rambo', _FRCNN_R18.format('rambo'))
        return dict(share=[frcnn, ('ATSS R18-w32', 'rank-sort',
                                   _ATSS_R18.format('rank-sort'))],
                    amp=[frcnn, ('ATSS R18-w32', 'alrp',
                                 _ATSS_R18.format('alrp'))],
                    compile=[frcnn])
    frcnn = [('ce', _FRCNN_R50.format('ce', 'coco')),
             ('rambo', _FRCNN_R50.format('rambo', 'voc0712')),
             ('rambo-bce', _FRCNN_R50.format('rambo-bce', 'coco')),
             ('rank-sort', _r50(_FRCNN_R50, 'rank-sort', 'coco'))]
    atss = [(k, _r50(_ATSS_R50, k)) for k in
            ('focal', 'rambo', 'rambo-focal', 'rank-sort', 'alrp')]
    share = [('Faster R-CNN R50', *c) for c in frcnn] + \
        [('ATSS R50', *c) for c in atss]
    # AMP: every rank loss of the two detectors; compiled: the RoI head's
    # RaMBO and the dense head's Rank & Sort (the targets' detectors)
    return dict(share=share,
                amp=[c for c in share if c[1] not in ('ce', 'focal')],
                compile=[c for c in share if c[:2] in (
                    ('Faster R-CNN R50', 'rambo'), ('ATSS R50', 'rank-sort'))])


def _length_inputs(n: int, device: torch.device, cache: dict) -> dict:
    """The inputs of every loss at length ``n``, made once per length."""
    if cache.get('length') != n:
        cache.clear()
        x = error_driven_inputs(n, device)
        g = torch.Generator().manual_seed(n + 1)
        x['labels'] = (torch.rand(n, generator=g) < 0.1).to(device)
        cache.update(length=n, x=x)
    return cache['x']


def length_case(key: str, x: dict) -> Callable[[], None]:
    """Forward + backward of the loss ``key`` of :data:`LENGTH_LOSSES`."""
    if key in _ERROR_DRIVEN_KEYS:
        return error_driven_case(x, *_ERROR_DRIVEN_KEYS[key])
    leaf, labels = x['leaf'], x['labels']
    if key == 'sort':
        return lambda: torch.sort(x['scores'])
    loss = dict(rambo_ap=rambo_ap_loss, naive_alg1=naive_ap_loss)[key]

    def run():
        leaf.grad = None
        loss(leaf, labels, 0.5, 0.15).backward()

    return run


def _length_row(key: str, n: int, device, repeats: int, cache: dict):
    def fn():
        x = _length_inputs(n, device, cache)
        positives = (int(x['labels'].sum()) if key in
                     ('rambo_ap', 'naive_alg1') else x['positives'])
        return dict(positives=positives,
                    **time_it(length_case(key, x), device, repeats))
    return fn


def _dense_batch(anchors: int, classes: int, channels: int, seed: int,
                 device: torch.device, per_anchor: Optional[str] = None):
    """One dense head's scores (anchors x channels), labels (1 %
    foreground, background = ``classes``), weights; ``per_anchor``: the
    RS / aLRP per-anchor input, U(0, 1)."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(anchors, channels, generator=g) - 4
    labels = torch.where(torch.rand(anchors, generator=g) < 0.01,
                         torch.randint(0, classes, (anchors, ), generator=g),
                         torch.full((anchors, ), classes))
    kwargs = dict(avg_factor=float((labels < classes).sum().clamp(min=1)))
    if per_anchor:
        kwargs[per_anchor] = torch.rand(anchors, generator=g).to(device)
    return (scores.to(device), (labels.to(device),
                                torch.ones(anchors, device=device)), kwargs)


def _roi_batch(rois: int, classes: int, seed: int, device: torch.device):
    """A RoI head's scores (rois x classes + 1), labels (25 % foreground),
    weights, avg_factor."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.where(torch.rand(rois, generator=g) < 0.25,
                         torch.randint(0, classes, (rois, ), generator=g),
                         torch.full((rois, ), classes))
    scores = torch.randn(rois, classes + 1, generator=g) * 0.5
    return (scores.to(device), (labels.to(device),
                                torch.ones(rois, device=device)),
            dict(avg_factor=rois))


def _embedding_batch(batch: int, dim: int, seed: int,
                     device: torch.device):
    g = torch.Generator().manual_seed(seed)
    embs = torch.nn.functional.normalize(torch.randn(batch, dim, generator=g),
                                         dim=1)
    return embs.to(device), ((torch.arange(batch) // 4).to(device), ), {}


def per_step_cases(smoke: bool) -> List[dict]:
    """The losses at training-step sizes: ``name``, ``cfg`` and ``batches``
    (seeds -> one call each; a step is one call, after the calls that fill
    the score memory)."""
    rois, anchors, classes = (16, 2_000, 8) if smoke else (512, 100_000, 80)
    recall_b = 32 if smoke else 256
    dense = f'dense, {anchors:,} anchors x {classes} classes'
    cases = [dict(name=f'RaMBOAPLoss, {k} x {rois} RoIs, 20+1 classes, '
                  'tau 7', cfg=dict(type='RaMBOAPLoss', memory=7),
                  kind='roi', size=(k * rois, 20), calls=8, case=case)
             for k, case in ((2, 'rambo_roi'),
                             (4 if smoke else 16, 'rambo_roi_large'))]
    cases += [
        dict(name=f'RaMBOAPLoss, {dense}, sigmoid, margin 0',
             cfg=dict(type='RaMBOAPLoss', score_space='sigmoid', margin=0.0,
                      memory=0), kind='dense', size=(anchors, classes),
             calls=1, case='rambo_dense'),
        dict(name=f'RankSortLoss, {dense}', cfg=dict(type='RankSortLoss'),
             kind='dense', size=(anchors, classes), calls=1,
             per_anchor='quality', case='rank_sort_dense'),
        dict(name=f'ALRPLoss, {dense}', cfg=dict(type='ALRPLoss'),
             kind='dense', size=(anchors, classes), calls=1,
             per_anchor='loc_error', case='alrp_dense'),
        dict(name=f'ErrorDrivenAPLoss, {dense}',
             cfg=dict(type='ErrorDrivenAPLoss'), kind='dense',
             size=(anchors, classes), calls=1, case='ap_loss_dense'),
        dict(name=f'RaMBORecallLoss log, memory 3, B {recall_b}, D 512',
             cfg=dict(type='RaMBORecallLoss', memory=3), kind='embedding',
             size=(recall_b, 512), calls=4, case='recall'),
    ]
    return cases


def _case_batches(case: dict, loss_fn, device: torch.device) -> list:
    a, b = case['size']
    if case['kind'] == 'roi':
        return [_roi_batch(a, b, seed, device) for seed in
                range(case['calls'])]
    if case['kind'] == 'embedding':
        return [_embedding_batch(a, b, seed, device)
                for seed in range(case['calls'])]
    channels = (loss_fn.get_cls_channels(b) if hasattr(
        loss_fn, 'get_cls_channels') else b + 1)
    return [_dense_batch(a, b, channels, seed, device, case.get(
        'per_anchor')) for seed in range(case['calls'])]


def loss_step_row(case: dict, device: torch.device, repeats: int,
                  amp: bool = False,
                  compile_backend: Optional[str] = None) -> dict:
    """Forward + backward of one training step of ``case``'s loss (per
    call); ``amp``: the scores in fp16 under autocast, backward through a
    GradScaler, and whether the gradient was finite (kept on the device,
    read after the timed calls); ``compile_backend``: the loss's
    ``forward`` under ``torch.compile(dynamic=True)``, timed after the calls
    that compile it (:func:`rankloss_lab.speed_run.time_it`)."""
    loss_fn = MODELS.build(case['cfg']).to(device)
    if compile_backend:
        loss_fn.forward = torch.compile(loss_fn.forward, dynamic=True,
                                        backend=compile_backend)
    batches = _case_batches(case, loss_fn, device)
    scaler = sr.amp_scaler(device) if amp else None
    finite = torch.ones((), dtype=torch.bool, device=device)

    def step():
        nonlocal finite
        for scores, args, kwargs in batches:
            leaf = scores.clone().requires_grad_(True)
            with torch.autocast(device.type, dtype=torch.float16,
                                enabled=amp):
                out = sr.summed_loss(loss_fn(leaf.half() if amp else leaf,
                                             *args, **kwargs))
            if amp:
                scaler.scale(out).backward()
                finite = finite & torch.isfinite(leaf.grad).all()
            else:
                out.backward()

    row = per_step(time_it(step, device, repeats), len(batches))
    if amp:
        row['grad_finite'] = bool(finite)
    if compile_backend:
        row['compile_backend'] = compile_backend
    return row


#: Expected seconds of the speed run's items on an H100 / H200-class GPU
#: (estimates, not measured: a detector item is dominated by building the
#: R50 model on the host, a compiled item by Inductor's compile, 55 s for
#: RaMBOAPLoss on the 2-core CPU), and of the smoke run's on a 2-core CPU
#: (rough; 2 to 5 times more with other work on it). The plan scales them
#: by the pace of the finished items; a run records each item's seconds
#: (``item_s``).
EXPECT_S = dict(
    gpu=dict(per_step=2.0, roi_align=2.0, share=8.0, amp=7.0,
             loss_compile=45.0, share_compile=55.0),
    smoke=dict(per_step=1.0, roi_align=0.5, share=15.0, amp=10.0,
               loss_compile=10.0, share_compile=20.0))


def _length_expect_s(n: int, smoke: bool) -> float:
    return 0.5 if smoke else 0.5 + n / 4e6


def speed_run_plan(args, device: torch.device) -> sr.Plan:
    """Every item of the speed run, in ``rankloss_lab.speed_run.SECTIONS``
    order; the compiled items each in a worker of their own."""
    expect = EXPECT_S['smoke' if args.smoke else 'gpu']
    plan = sr.Plan(args.budget_s, device)
    cache: dict = {}
    for n in args.lengths:
        for key, label in LENGTH_LOSSES:
            plan.add('lengths', f'{key} n={n:,}',
                     _length_row(key, n, device, args.repeats, cache),
                     expect_s=_length_expect_s(n, args.smoke), length=n,
                     loss=key, label=label)
    cases = per_step_cases(args.smoke)
    for case in cases:
        plan.add('per_step', case['name'], functools.partial(
            loss_step_row, case, device, args.repeats),
            expect_s=expect['per_step'], case=case['case'])
    _plan_detectors(plan, 'step_share', args.smoke, device, expect)
    for case in cases:
        plan.add('amp', f'{case["name"]}, AMP', functools.partial(
            loss_step_row, case, device, args.repeats, amp=True),
            expect_s=expect['per_step'], case=case['case'])
    rois, size = (32, (16, 32)) if args.smoke else (1024, (200, 336))
    plan.add('amp', f'mmcv RoIAlign, fp16 features and {rois} fp16 RoIs '
             'under autocast', functools.partial(
                 sr.roi_align_row, device, args.repeats, rois,
                 16 if args.smoke else 256, size),
             expect_s=expect['roi_align'], case='roi_align')
    _plan_detectors(plan, 'amp', args.smoke, device, expect)
    backend = 'eager' if args.smoke else 'inductor'
    case = cases[0]  # the plain RaMBOAPLoss of a Faster R-CNN step
    plan.add('per_step_compile', f'{case["name"]}, compiled ({backend})',
             functools.partial(loss_step_row, case, device, args.repeats,
                               compile_backend=backend),
             expect_s=expect['loss_compile'], isolated=True,
             case=case['case'])
    _plan_detectors(plan, 'step_share_compile', args.smoke, device, expect)
    return plan


def worker_plan(**kwargs) -> sr.Plan:
    """The plan of a speed-run worker (``speed_run(args)``'s arguments)."""
    return speed_run_plan(argparse.Namespace(**kwargs),
                          torch.device(kwargs['device']))


def _plan_detectors(plan, section: str, smoke: bool, device: torch.device,
                    expect: dict) -> None:
    """The detector items of ``section``: step shares (eager, or with the
    losses under torch.compile: inductor, the eager backend in a smoke run)
    or AMP steps, on 2 random images of 1333 x 800 (128 x 128 smoke)."""
    size = (128, 128) if smoke else (800, 1333)
    steps, repeats, warmup = (1, 1, 1) if smoke else (3, 5, 8)
    key, what, expect_key = dict(
        step_share=('share', 'eager', 'share'),
        amp=('amp', 'AMP step', 'amp'),
        step_share_compile=('compile', 'loss under torch.compile',
                            'share_compile'),
    )[section]
    backend = None
    if section == 'step_share_compile':
        backend = 'eager' if smoke else 'inductor'
    for detector, loss, config in detector_configs(smoke)[key]:
        if section == 'amp':
            fn = functools.partial(sr.amp_row, config, device, size, steps)
        else:
            fn = functools.partial(sr.share_row, config, device, size, steps,
                                   repeats, backend, warmup)
        plan.add(section, f'{detector}, {loss}, {what}', fn,
                 expect_s=expect[expect_key], isolated=backend is not None,
                 detector=detector, loss=loss)


def speed_run(args, device: torch.device) -> dict:
    """Runs :func:`speed_run_plan` and returns the JSON's content."""
    result = dict(
        format=sr.FORMAT, version=mmdet_rankloss.__version__,
        date=time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()),
        machine=machine_name(), device=device.type,
        device_name=sr.device_label(device), torch=torch.__version__,
        cuda=torch.version.cuda, threads=torch.get_num_threads(),
        smoke=bool(args.smoke), budget_s=args.budget_s,
        repeats=args.repeats, lengths_asked=list(args.lengths),
        target_lengths=list(args.lengths) if args.smoke else
        [n for n in args.lengths if n >= 1_000_000],
        length_losses=dict(LENGTH_LOSSES),
        paper_numbers=paper_numbers())
    print(f"speed run on {result['device_name']} ({device}), budget "
          f'{args.budget_s:.0f} s, items in worker processes:', flush=True)
    worker = sr.worker_command(
        f'{os.path.abspath(__file__)}:worker_plan', smoke=bool(args.smoke),
        budget_s=args.budget_s, repeats=args.repeats,
        lengths=list(args.lengths), device=str(device))
    result = speed_run_plan(args, device).run(result, worker)
    sr.evaluate_targets(result)
    return result


def _ms(row: dict, key: str) -> str:
    return f"{row[key]['median_s']*1e3:.1f} ms" if key in row else 'not run'


def paper_numbers() -> dict:
    """The bucketed paper's own speed-ups, labelled as paper numbers (in a
    speed run's JSON and under the error-driven table)."""
    return dict(label='paper numbers, not measured here',
                source='Yavuz et al., ECCV 2024, bucketed ranking-based '
                'losses; their GPU is not named',
                seconds_per_iter={k: list(v) for k, v in
                                  PAPER_SECONDS_PER_ITER.items()})


def error_driven_markdown(rows: List[dict]) -> List[str]:
    """The RS / aLRP / AP table: ours, the bucketed peer, the naive one."""
    lines = [
        'RS / aLRP / AP error-driven update, forward+backward, '
        f"{rows[0]['positives']} positives, CPU, 1 thread; bucketed: the "
        'peer of lab/rankloss_lab/bucketed_losses.py (hard step)', '',
        '| loss | length | torch.sort | ours | ours / sort | bucketed '
        '| bucketed / ours | naive dense | ours peak mem |',
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|'
    ]
    for r in rows:
        ratio = f"{r['bucketed_over_ours']:.2f}" if 'bucketed' in r else '-'
        lines.append(
            f"| {r['mode']} | {r['length']:,} | {_ms(r, 'sort')} "
            f"| {_ms(r, 'ours')} | {r['ours_over_sort']:.2f} "
            f"| {_ms(r, 'bucketed')} | {ratio} | {_ms(r, 'naive')} "
            f"| {r['ours']['peak_mem_mb']:.0f} MB |")
    return lines + ['', speed_tables.paper_line(paper_numbers()), '']


def to_markdown(result: dict) -> str:
    lines = [f"Machine: {result['machine']}", '']
    if result.get('error_driven'):
        lines += error_driven_markdown(result['error_driven'])
    for setting, rows in result['ap'].items():
        lines += [
            f'AP loss forward+backward, 10 % positives, margin 0.15, '
            f'lambda 0.5 ({setting})', '',
            '| length | torch.sort | ours | ours / sort | naive Alg. 1 '
            '| naive / ours | ours peak mem |',
            '|---:|---:|---:|---:|---:|---:|---:|'
        ]
        for r in rows:
            ratio = f"{r['naive_over_ours']:.2f}x" if 'naive' in r else '-'
            lines.append(
                f"| {r['length']:,} | {_ms(r, 'sort')} | {_ms(r, 'ours')} "
                f"| {r['ours_over_sort']:.2f}x | {_ms(r, 'naive')} | {ratio} "
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
    parser.add_argument('--speed-run', action='store_true',
                        help='the one-command speed run (every loss and '
                        'peer at --lengths, per-step costs, detector step '
                        'shares eager and under torch.compile, AMP steps) '
                        'on CUDA if present, else CPU, within --budget-s; '
                        'writes <out>.json and the docs section <out>.md')
    parser.add_argument('--budget-s', type=float, default=420.0,
                        help='--speed-run: seconds it may take; what does '
                        'not fit is skipped and listed')
    parser.add_argument('--out', default='work_dirs/benchmark/rank_losses')
    args = parser.parse_args(argv)
    if args.smoke:
        args.lengths, args.repeats = [1_000, 10_000], 2
        if args.error_driven_lengths:
            args.error_driven_lengths = [2_000]
    if args.speed_run:
        device = _device(parser, args.devices)
        if args.smoke:
            args.lengths = [1_000, 4_000]
        return _write(speed_run(args, device), args.out,
                      lambda r: speed_markdown(r, args.out))
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
    if _device(parser, args.devices).type == 'cuda':
        settings.append((f'CUDA, {torch.cuda.get_device_name()}',
                         torch.device('cuda'), all_threads))
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


def _device(parser, devices: List[str]) -> torch.device:
    """CUDA where present and asked for, else the CPU; ``--devices cuda``
    alone without CUDA is an error."""
    if 'cuda' in devices and torch.cuda.is_available():
        return torch.device('cuda')
    if devices == ['cuda']:
        parser.error('--devices cuda: torch.cuda.is_available() is False on '
                     'this machine')
    return torch.device('cpu')


def speed_markdown(result: dict, out: str) -> str:
    """The docs section of a speed run (``rankloss_lab.speed_tables``),
    linking ``<out>.json`` by its file name."""
    return speed_tables.speed_section(result,
                                      os.path.basename(out) + '.json')


def _write(result: dict, out: str,
           markdown: Callable[[dict], str] = None) -> dict:
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + '.json', 'w') as f:
        json.dump(result, f, indent=1)
    with open(out + '.md', 'w') as f:
        f.write((markdown or to_markdown)(result) + '\n')
    print(f'results written to {out}.json and {out}.md')
    return result


if __name__ == '__main__':
    sys.exit(0 if main() else 1)
