"""Benchmark the rank losses: forward + backward time and peak memory.

On CUDA if present, else the CPU, within ``--budget-s``, each item in a
worker process (``rankloss_lab.speed_run.Plan``), the sections of
``rankloss_lab.speed_run.SECTIONS`` (docs/losses.md#ranking-core-and-speed).
Writes ``<out>.json`` (each row with the targets it is held to) and
``<out>.md`` (``rankloss_lab.speed_tables``); ``--smoke``: tiny sizes::

    python tools/analysis_tools/benchmark_rank_losses.py \\
        --out docs/evidence/gpu/speed_run
    python tools/analysis_tools/evidence_tables.py --write
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
from rankloss_lab.speed_run import time_it

# --- naive Algorithm 1, from the paper: ranks by a double argsort, both
# rankers of Eq. 21 differentiated


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


# --- the items of the sections

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
#: key -> (mode, smoothing width; None: the bucketed peer, hard step) of
#: the error-driven rows.
_ERROR_DRIVEN_KEYS = {
    'rs': ('rs', 0.5), 'rs_bucketed': ('rs', None), 'ap_loss': ('ap', 1.0),
    'ap_loss_bucketed': ('ap', None), 'alrp': ('alrp', 1.0),
}
_FRCNN_R50 = 'configs/rambo/faster-rcnn_r50_fpn_{}_1x_{}.py'
_ATSS_R50 = 'configs/dense/atss/atss_r50_fpn_{}_1x_coco.py'
_FRCNN_R18 = 'configs/digitsvoc/faster-rcnn_r18-w32_fpn_{}_16e_digitsvoc.py'
_ATSS_R18 = 'configs/dense/atss/atss_r18-w32_fpn_{}_16e_digitsvoc.py'
#: losses benchmarked on MMDetection's recipe (``_mmdet-1x_``: the focal
#: twin's model and anchors), not on their authors'
_MMDET_RECIPE = ('rank-sort', 'alrp')


def _r50(template: str, loss: str, *args) -> str:
    path = template.format(loss, *args)
    if loss in _MMDET_RECIPE:
        path = path.replace('_1x_', '_mmdet-1x_')
    return path


def detector_configs(smoke: bool) -> Dict[str, List[tuple]]:
    """(detector, loss, config) of the step-share, AMP and compile items:
    R50 (RaMBO's Faster R-CNN on VOC, the rest on COCO), or for a smoke
    run DigitsVOC R18-w32 models, one of each kind of head."""
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


def _length_inputs(n: int, device: torch.device, cache: dict,
                   num_pos: int = 500) -> dict:
    """The inputs at length ``n``, made once per length: N(0, 1) fp32
    scores, ``num_pos`` random positives with U(0, 1) labels / errors for
    the error-driven losses, 10 % positives for the AP losses."""
    if cache.get('length') != n:
        g = torch.Generator().manual_seed(n)
        scores = torch.randn(n, generator=g)
        pos = torch.zeros(n, dtype=torch.bool)
        pos[torch.randperm(n, generator=g)[:num_pos]] = True
        quality = torch.rand(num_pos, generator=g)
        labels = torch.rand(n, generator=torch.Generator().manual_seed(
            n + 1)) < 0.1
        cache.clear()
        cache.update(length=n, x=dict(
            scores=scores.to(device), pos=pos.to(device),
            quality=quality.to(device), labels=labels.to(device),
            leaf=scores.clone().to(device).requires_grad_(True),
            positives=num_pos))
    return cache['x']


def length_case(key: str, x: dict) -> Callable[[], None]:
    """Forward + backward of the loss ``key`` of :data:`LENGTH_LOSSES`."""
    leaf, pos, quality = x['leaf'], x['pos'], x['quality']
    if key == 'sort':
        return lambda: torch.sort(x['scores'])
    mode, delta = _ERROR_DRIVEN_KEYS.get(key, (None, None))

    def run():
        leaf.grad = None
        if key in ('rambo_ap', 'naive_alg1'):
            loss = rambo_ap_loss if key == 'rambo_ap' else naive_ap_loss
            loss(leaf, x['labels'], 0.5, 0.15).backward()
        elif delta is None:
            bucketed_loss(leaf, pos, mode, quality=quality).backward()
        else:
            error_driven_loss(leaf, pos, delta, mode, quality=quality,
                              loc_error=quality)[0].backward()

    return run


def _length_row(key: str, n: int, device, repeats: int, cache: dict):
    def fn():
        x = _length_inputs(n, device, cache)
        positives = (int(x['labels'].sum()) if key in
                     ('rambo_ap', 'naive_alg1') else x['positives'])
        return dict(positives=positives,
                    **time_it(length_case(key, x), device, repeats))
    return fn


def per_step_cases(smoke: bool) -> List[dict]:
    """The losses at training-step sizes: ``name``, ``cfg``, ``kind``,
    ``size`` and ``calls`` (one step: that many calls, seeds 0, 1, ...)."""
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
    # not under AMP: the other AP back-ends (an untrained BiLSTM sorter, of
    # the pre-trained one's cost) and the retrieval losses at their papers'
    # batch sizes (SoDeep's sorters: B 101, each row ranks the other 100)
    for ranker, name in ((dict(type='SigmoidRanker', temperature=1.0),
                          'sigmoid soft rank, t 1'),
                         (dict(type='SorterRanker', sorter=dict(
                             type='LSTMSorter', seq_len=100)),
                          'SoDeep BiLSTM sorter, d 100')):
        cases.append(dict(cases[0], name=f'{cases[0]["name"]}, {name}',
                          cfg=dict(cases[0]['cfg'], ranker=ranker),
                          case=ranker['type'], amp=False, max_repeats=2))
    for name, cfg, b, d in (
            ('FastAPLoss', dict(type='FastAPLoss'), 256, 512),
            ('SoftRankThresholdLoss', dict(type='SoftRankThresholdLoss'),
             72, 128), ('AUCLoss batch-hard', dict(type='AUCLoss'), 128,
                        128),
            ('BatchHardTripletLoss', dict(type='BatchHardTripletLoss'), 128,
             128), ('WilcoxonLoss', dict(type='WilcoxonLoss'), 128, 128),
            *((f'SoDeepRecallLoss, {arch} (untrained)', dict(
                type='SoDeepRecallLoss', sorter=dict(type=arch,
                                                     seq_len=100)), 101, 128)
              for arch in ('HandcraftedSorter', 'LSTMSorter', 'CNNSorter'))):
        b = b if b == 101 or not smoke else 32
        cases.append(dict(name=f'{name}, B {b}, D {d}', cfg=cfg,
                          kind='embedding', size=(b, d), calls=1, case=name,
                          amp=False))
    return cases


def _case_batch(case: dict, channels: int, seed: int,
                device: torch.device) -> tuple:
    """One call's (scores, args, kwargs) of ``case``: unit embeddings, 4
    per class; or a RoI head's (25 % foreground) or a dense head's scores
    (``channels`` wide, 1 % foreground), labels, weights, avg_factor."""
    g = torch.Generator().manual_seed(seed)
    n, classes = case['size']
    if case['kind'] == 'embedding':
        embs = torch.nn.functional.normalize(
            torch.randn(n, classes, generator=g), dim=1)
        return embs.to(device), ((torch.arange(n) // 4).to(device), ), {}
    dense = case['kind'] == 'dense'
    if dense:
        scores = torch.randn(n, channels, generator=g) - 4
    fg = torch.rand(n, generator=g) < (0.01 if dense else 0.25)
    labels = torch.where(fg, torch.randint(0, classes, (n, ), generator=g),
                         torch.full((n, ), classes))
    kwargs = dict(avg_factor=float(fg.sum().clamp(min=1)) if dense else n)
    if not dense:
        scores = torch.randn(n, classes + 1, generator=g) * 0.5
    elif case.get('per_anchor'):
        kwargs[case['per_anchor']] = torch.rand(n, generator=g).to(device)
    return (scores.to(device), (labels.to(device),
                                torch.ones(n, device=device)), kwargs)


def loss_step_row(case: dict, device: torch.device, repeats: int,
                  amp: bool = False,
                  compile_backend: Optional[str] = None) -> dict:
    """Forward + backward of one training step of ``case``'s loss, per
    call (:func:`rankloss_lab.speed_run.time_it`); ``amp``: fp16 scores
    under autocast and a GradScaler, and whether the gradient was finite;
    ``compile_backend``: the ``forward`` under ``torch.compile``."""
    loss_fn = MODELS.build(case['cfg']).to(device)
    if compile_backend:
        loss_fn.forward = torch.compile(loss_fn.forward, dynamic=True,
                                        backend=compile_backend)
    channels = (loss_fn.get_cls_channels(case['size'][1]) if hasattr(
        loss_fn, 'get_cls_channels') else case['size'][1] + 1)
    batches = [_case_batch(case, channels, seed, device)
               for seed in range(case['calls'])]
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

    row = {k: v / len(batches) if k.endswith('_s') else v
           for k, v in time_it(step, device, min(
               repeats, case.get('max_repeats', repeats))).items()}
    if amp:
        row['grad_finite'] = bool(finite)
    if compile_backend:
        row['compile_backend'] = compile_backend
    return row


#: Expected seconds of the items on an H100 / H200-class GPU (estimates: a
#: detector item is mostly building the R50 model, a compiled one Inductor's
#: compile), and of the smoke run's on a 2-core CPU (rough).
EXPECT_S = dict(
    gpu=dict(per_step=2.0, roi_align=2.0, share=8.0, amp=7.0,
             loss_compile=45.0, share_compile=55.0),
    smoke=dict(per_step=1.0, roi_align=0.5, share=15.0, amp=10.0,
               loss_compile=10.0, share_compile=20.0))


def speed_run_plan(args, device: torch.device) -> sr.Plan:
    """Every item of ``args.sections``; compiled ones in their own worker."""
    expect = EXPECT_S['smoke' if args.smoke else 'gpu']
    plan = sr.Plan(args.budget_s, device, args.sections)
    if device.type != 'cuda':  # seconds per call, not the GPU's estimates
        plan.min_limit_s = 300.0
    cache: dict = {}
    for n in args.lengths:
        for key, label in LENGTH_LOSSES:
            plan.add('lengths', f'{key} n={n:,}',
                     _length_row(key, n, device, args.repeats, cache),
                     expect_s=0.5 if args.smoke else 0.5 + n / 4e6, length=n,
                     loss=key, label=label)
    cases = per_step_cases(args.smoke)
    for case in cases:
        plan.add('per_step', case['name'], functools.partial(
            loss_step_row, case, device, args.repeats),
            expect_s=expect['per_step'] * (1 if case.get('amp', True) else
                                           0.5),
            case=case['case'])
    _plan_detectors(plan, 'step_share', args.smoke, device, expect)
    for case in (c for c in cases if c.get('amp', True)):
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
    """The detector items of ``section`` (step shares, eager or compiled,
    or AMP steps) on 2 random images of 1333 x 800 (128 x 128 smoke)."""
    size = (128, 128) if smoke else (800, 1333)
    steps, repeats, warmup = (1, 1, 1) if smoke else (3, 5, 8)
    key, what, expect_key = dict(
        step_share=('share', 'eager', 'share'),
        amp=('amp', 'AMP step', 'amp'),
        step_share_compile=('compile', 'loss under torch.compile',
                            'share_compile'),
    )[section]
    backend = None if section != 'step_share_compile' else (
        'eager' if smoke else 'inductor')
    kwargs = dict(amp=True) if section == 'amp' else dict(
        repeats=repeats, compile_backend=backend, warmup=warmup)
    for detector, loss, config in detector_configs(smoke)[key]:
        plan.add(section, f'{detector}, {loss}, {what}', functools.partial(
            sr.share_row, config, device, size, steps, **kwargs),
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
        sections=list(args.sections),
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
        lengths=list(args.lengths), device=str(device),
        sections=list(args.sections))
    result = speed_run_plan(args, device).run(result, worker)
    sr.evaluate_targets(result)
    return result


def paper_numbers() -> dict:
    """The bucketed paper's own speed-ups, labelled as paper numbers."""
    return dict(label='paper numbers, not measured here',
                source='Yavuz et al., ECCV 2024, bucketed ranking-based '
                'losses; their GPU is not named',
                seconds_per_iter={k: list(v) for k, v in
                                  PAPER_SECONDS_PER_ITER.items()})


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--lengths', type=int, nargs='+',
                        default=[100_000, 1_000_000, 10_000_000])
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--sections', nargs='+', choices=sr.SECTIONS,
                        default=list(sr.SECTIONS), help='the sections to '
                        'run (default: all)')
    parser.add_argument('--smoke', action='store_true',
                        help='tiny sizes, for CI: checks the tool runs')
    parser.add_argument('--budget-s', type=float, default=420.0,
                        help='seconds the run may take; what does not fit '
                        'is skipped and listed')
    parser.add_argument('--out', default='work_dirs/benchmark/rank_losses')
    return parser.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> dict:
    args = parse_args(argv)
    if args.smoke:
        args.lengths, args.repeats = [1_000, 4_000], 2
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    result = speed_run(args, device)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + '.json', 'w') as f:
        json.dump(result, f, indent=1)
    with open(args.out + '.md', 'w') as f:
        f.write(speed_tables.speed_section(
            result, os.path.basename(args.out) + '.json') + '\n')
    print(f'results written to {args.out}.json and {args.out}.md')
    return result


if __name__ == '__main__':
    sys.exit(0 if main() else 1)
