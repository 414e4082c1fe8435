"""The RaMBO AP loss on a RetinaNet step: gradient density, speed, share.

Builds RetinaNet R50 FPN for VOC07+12 from ``configs/dense/retinanet/``
(random weights, no download) and a batch of 2 images at the size of a VOC
image after MMDetection's pipeline (800 x 600; ``--size``) with 3 boxes
each, then measures, in one run:

1. **Gradient density** (``density``): for each score space a sigmoid head
   can feed (``'logits'``, ``'sigmoid'``), the share of the (anchor, class)
   scores that get a non-zero gradient from the loss ranked over all
   anchors of the batch, the share of positives pushed up, and the exact
   mAP of the margin-shifted scores, with the head as initialised (*fresh*)
   and after ``--fit-steps`` Adam steps of focal loss on the classifier
   alone (*fitted*: a head that already ranks this batch partly).
2. **Speed** (``speed``): forward + backward of the classification loss of
   :class:`~mmdet_rankloss.models.RaMBORetinaHead` (concatenation of the
   levels included) on the step's real scores and targets, in
   *sort-equivalents*: divided by the time of one ``torch.sort`` of a 1-D
   float32 tensor as long as the ranked (anchor, class) scores, called in
   turn with the loss. With the configs' ``memory=0``, on the fresh
   head's scores and on the same scores spread like a trained head's, and
   with the paper's tau = 7 (filled with 7 other batches first).
3. **Share of a training step** (``step``): full steps (forward, backward,
   SGD) of the focal and the RaMBO model, and the time spent in the RaMBO
   classification loss inside those steps, as a share of the step.

Medians over ``--repeats``; a progress line per timed call. Writes
``<out>.json``.

    python tools/analysis_tools/benchmark_dense_loss.py --out work_dirs/dense_bench
"""
import argparse
import itertools
import json
import logging
import os
import platform
import statistics
import time

import torch
from mmengine.config import Config
from mmengine.logging import MMLogger

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

import mmdet_rankloss  # noqa: F401
from mmdet.registry import MODELS
from mmdet.structures import DetDataSample
from mmengine.structures import InstanceData

CONFIGS = dict(
    focal='configs/dense/retinanet/retinanet_r50_fpn_focal_1x_voc0712.py',
    rambo='configs/dense/retinanet/retinanet_r50_fpn_rambo_1x_voc0712.py')
SCORE_SPACES = ('logits', 'sigmoid')
MARGINS = (0.15, 0.0)  # the paper's, and none


def progress(msg: str) -> None:
    print(f'[{time.strftime("%H:%M:%S")}] {msg}', flush=True)


def build(name: str, **loss_cfg):
    cfg = Config.fromfile(os.path.join(ROOT, CONFIGS[name]))
    cfg.model.backbone.init_cfg = None  # random weights, no download
    cfg.model.bbox_head.loss_cls.update(loss_cfg)
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    return model.train()


def fake_batch(model, size=(600, 800), num_images=2, num_boxes=3, seed=0):
    """Random images with VOC-like boxes (40 to 480 px, 20 classes)."""
    g = torch.Generator().manual_seed(seed)
    h, w = size
    inputs, samples = [], []
    for _ in range(num_images):
        inputs.append(
            torch.randint(0, 256, (3, h, w), generator=g, dtype=torch.uint8))
        wh = 40 + torch.rand(num_boxes, 2, generator=g) * torch.tensor(
            [min(w, 480) - 40., min(h, 480) - 40.])
        xy = torch.rand(num_boxes, 2, generator=g) * (
            torch.tensor([w, h]) - wh)
        sample = DetDataSample(metainfo=dict(
            img_shape=size, ori_shape=size, scale_factor=(1.0, 1.0)))
        sample.gt_instances = InstanceData(
            bboxes=torch.cat([xy, xy + wh], 1),
            labels=torch.randint(0, 20, (num_boxes, ), generator=g))
        samples.append(sample)
    return model.data_preprocessor(
        dict(inputs=inputs, data_samples=samples), True)


def head_inputs(model, data):
    """Neck features (no grad), ground truth and metas of the batch."""
    samples = data['data_samples']
    with torch.no_grad():
        feats = model.extract_feat(data['inputs'])
    return (feats, [s.gt_instances for s in samples],
            [s.metainfo for s in samples])


def cls_tower(head, feats):
    """The classification branch up to (not including) ``retina_cls``."""
    out = []
    with torch.no_grad():
        for x in feats:
            for conv in head.cls_convs:
                x = conv(x)
            out.append(x)
    return out


def rank_loss_step(head, cls_feats, bbox_preds, gts, metas):
    """Classification outputs of the head from cached tower features,
    ``loss_by_feat`` and backward of the loss terms; returns the logged
    values and the gradient of the scores."""
    scores = [head.retina_cls(f).detach().requires_grad_() for f in cls_feats]
    losses = head.loss_by_feat(scores, bbox_preds, gts, metas)
    total = sum(v for k, v in losses.items() if k.startswith('loss_rambo'))
    total.backward()
    grads = torch.cat([s.grad.permute(0, 2, 3, 1).reshape(-1) for s in scores])
    logits = torch.cat([s.detach().reshape(-1) for s in scores])
    return losses, grads, logits


def fit_classifier(focal_model, cls_feats, bbox_preds, gts, metas, steps,
                   lr):
    """Adam on ``retina_cls`` with focal loss: a head that ranks this batch
    partly (the 'fitted' state)."""
    head = focal_model.bbox_head
    opt = torch.optim.Adam(head.retina_cls.parameters(), lr=lr)
    for i in range(steps):
        scores = [head.retina_cls(f) for f in cls_feats]
        loss = sum(head.loss_by_feat(scores, bbox_preds, gts, metas)
                   ['loss_cls'])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if (i + 1) % 10 == 0 or i + 1 == steps:
            progress(f'fit {i + 1}/{steps} focal loss {loss.item():.4f}')


def density(args, data):
    focal = build('focal')
    feats, gts, metas = head_inputs(focal, data)
    cls_feats = cls_tower(focal.bbox_head, feats)
    with torch.no_grad():
        bbox_preds = focal.bbox_head(feats)[1]
    rows = []
    states = [('fresh', 0), ('fitted', args.fit_steps)]
    fitted_so_far = 0
    for state, steps in states:
        fit_classifier(focal, cls_feats, bbox_preds, gts, metas,
                       steps - fitted_so_far, args.fit_lr)
        fitted_so_far = steps
        for space, margin in itertools.product(SCORE_SPACES, MARGINS):
            rambo = build('rambo', score_space=space, margin=margin)
            rambo.bbox_head.load_state_dict(focal.bbox_head.state_dict())
            t0 = time.perf_counter()
            logged, grads, logits = rank_loss_step(
                rambo.bbox_head, cls_feats, bbox_preds, gts, metas)
            row = dict(
                state=state,
                score_space=space,
                margin=margin,
                scores=grads.numel(),
                logit_mean=logits.mean().item(),
                logit_std=logits.std().item(),
                grad_density_all=(grads != 0).float().mean().item(),
                seconds=time.perf_counter() - t0)
            for key in ('rambo_grad_density', 'rambo_pos_grad_frac',
                        'rambo_neg_grad_frac', 'rambo_ap'):
                if key in logged:
                    row[key] = float(logged[key])
            rows.append(row)
            progress('density ' + json.dumps(row))
    return rows


def _timed(fn):
    """Wall-clock and CPU seconds of the process (all its threads)."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def _sort_equivalents(fn, ref, repeats, label):
    """Median time of ``fn`` and of ``torch.sort(ref)``, called in turn so
    that both see the same load of a shared machine, and the median of
    the per-pair ratios; in wall-clock and in CPU time. With one thread
    the CPU-time ratio does not count the time the process waits for a
    core, so it moves less with the load of a shared machine."""
    pairs, cpu_pairs = [], []
    for i in range(repeats):
        (sort_s, sort_cpu), (fn_s, fn_cpu) = (_timed(lambda: torch.sort(ref)),
                                              _timed(fn))
        pairs.append((sort_s, fn_s))
        cpu_pairs.append((sort_cpu, fn_cpu))
        progress(f'{label} {i + 1}/{repeats}: {fn_s:.3f} s (CPU '
                 f'{fn_cpu:.3f} s), torch.sort of {ref.numel()}: '
                 f'{sort_s:.3f} s (CPU {sort_cpu:.3f} s)')
    return dict(
        sort_s=statistics.median(p[0] for p in pairs),
        loss_s=statistics.median(p[1] for p in pairs),
        sort_equivalents=statistics.median(p[1] / p[0] for p in pairs),
        pairs=pairs,
        cpu_sort_s=statistics.median(p[0] for p in cpu_pairs),
        cpu_loss_s=statistics.median(p[1] for p in cpu_pairs),
        cpu_sort_equivalents=statistics.median(p[1] / p[0]
                                               for p in cpu_pairs),
        cpu_pairs=cpu_pairs)


def speed(args, data):
    rambo = build('rambo')
    head = rambo.bbox_head
    feats, gts, metas = head_inputs(rambo, data)
    with torch.no_grad():
        cls_scores, bbox_preds = head(feats)
    # the per-level inputs loss_by_feat hands to loss_cls
    collected = {}

    def collect(scores, labels, weights, avg_factor=None):
        collected.update(scores=[s.detach() for s in scores],
                         labels=labels, weights=weights)
        return {}

    head.loss_cls_all_anchors, original = collect, head.loss_cls_all_anchors
    head.loss_by_feat(cls_scores, bbox_preds, gts, metas)
    head.loss_cls_all_anchors = original
    labels = torch.cat(collected['labels'])
    weights = torch.cat(collected['weights'])
    num_classes = head.num_classes
    anchors = labels.numel()
    info = dict(
        anchors=anchors,
        classes=num_classes,
        ranked_scores=int((weights > 0).sum()) * num_classes,
        positives=int(((labels < num_classes) & (weights > 0)).sum()),
        ignored=int((weights == 0).sum()))
    progress('speed inputs ' + json.dumps(info))

    def loss_fwd_bwd():
        scores = [s.clone().requires_grad_() for s in collected['scores']]
        out = head.loss_cls_all_anchors(scores, collected['labels'],
                                        collected['weights'])
        (out['loss_rambo_map'] + out['loss_rambo_apc']).backward()

    ref = torch.randn(anchors * num_classes)
    result = dict(info)
    if 'memory0' in args.speed_cases:
        result['memory0'] = _sort_equivalents(loss_fwd_bwd, ref, args.repeats,
                                              'loss fwd+bwd, memory 0')
    # The fresh head's logits lie within a few thousandths of each other:
    # many fp32 scores tie, and Algorithm 1's second ranking then falls
    # back to a full sort. A trained head's logits are spread: the same
    # scores plus N(0, 1.65^2), the spread of the fitted head of `density`.
    fresh = collected['scores']
    g = torch.Generator().manual_seed(2)
    collected['scores'] = [
        s + 1.65 * torch.randn(s.shape, generator=g) for s in fresh
    ]
    if 'spread' in args.speed_cases:
        result['memory0_spread'] = _sort_equivalents(
            loss_fwd_bwd, ref, args.repeats,
            'loss fwd+bwd, memory 0, spread scores')
    collected['scores'] = fresh
    if 'memory7' not in args.speed_cases:
        progress('speed ' + json.dumps(result))
        return result
    paper = build('rambo', memory=7).bbox_head
    paper.loss_cls.train()
    g = torch.Generator().manual_seed(1)
    for _ in range(7):  # fill the memory with 7 other batches' scores
        # (copies of this batch would tie every score 8 times)
        other = [
            s + 0.01 * torch.randn(s.shape, generator=g)
            for s in collected['scores']
        ]
        paper.loss_cls_all_anchors(other, collected['labels'],
                                   collected['weights'])
    head = paper
    result['memory7'] = _sort_equivalents(
        loss_fwd_bwd, ref, max(1, args.repeats // 2),
        'loss fwd+bwd, memory 7')
    progress('speed ' + json.dumps(result))
    return result


def step(args, data):
    out = {}
    for name in ('focal', 'rambo'):
        model = build(name)
        head = model.bbox_head
        in_loss = []
        if name == 'rambo':
            original = head.loss_cls_all_anchors

            def timed(*a, **k):
                t0, c0 = time.perf_counter(), time.process_time()
                result = original(*a, **k)
                in_loss.append((time.perf_counter() - t0,
                                time.process_time() - c0))
                return result

            head.loss_cls_all_anchors = timed
        opt = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
        times, cpu_times = [], []
        for i in range(args.steps + 1):  # the first one warms up
            t0, c0 = time.perf_counter(), time.process_time()
            losses = model(**data, mode='loss')
            total = sum(
                v.sum() if isinstance(v, torch.Tensor) else sum(v)
                for k, v in losses.items() if 'loss' in k)
            opt.zero_grad()
            total.backward()
            opt.step()
            dt, dc = time.perf_counter() - t0, time.process_time() - c0
            progress(f'step {name} {i}/{args.steps}'
                     f'{" (warm-up)" if i == 0 else ""}: {dt:.2f} s (CPU '
                     f'{dc:.2f} s)')
            if i:
                times.append(dt)
                cpu_times.append(dc)
        out[name] = dict(step_s=statistics.median(times), step_times=times,
                         step_cpu_s=statistics.median(cpu_times))
        if in_loss:
            # forward of the loss; its backward is a multiplication by the
            # gradient computed in forward (timed in `speed`)
            out[name]['loss_forward_in_step_s'] = statistics.median(
                t[0] for t in in_loss[1:])
            out[name]['loss_forward_in_step_cpu_s'] = statistics.median(
                t[1] for t in in_loss[1:])
    out['loss_share_of_rambo_step'] = (
        out['rambo']['loss_forward_in_step_s'] / out['rambo']['step_s'])
    out['loss_share_of_rambo_step_cpu'] = (
        out['rambo']['loss_forward_in_step_cpu_s'] /
        out['rambo']['step_cpu_s'])
    out['step_ratio_rambo_to_focal'] = (
        out['rambo']['step_s'] / out['focal']['step_s'])
    progress('step ' + json.dumps(out))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--parts', nargs='+', default=['density', 'speed',
                                                       'step'],
                        choices=['density', 'speed', 'step'])
    parser.add_argument('--size', type=int, nargs=2, default=[600, 800],
                        metavar=('H', 'W'))
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument(
        '--speed-cases', nargs='+', default=['memory0', 'spread', 'memory7'],
        choices=['memory0', 'spread', 'memory7'],
        help='loss inputs timed by `speed`: the fresh head\'s scores, the '
        'same spread like a trained head\'s, the paper\'s memory tau = 7 '
        '(slow: 8 loss calls of 30 sort-equivalents)')
    parser.add_argument('--steps', type=int, default=2)
    parser.add_argument('--fit-steps', type=int, default=30)
    parser.add_argument('--fit-lr', type=float, default=1e-2)
    parser.add_argument('--out', default='work_dirs/dense_bench')
    args = parser.parse_args()
    if args.repeats < 1 or args.steps < 1 or args.fit_steps < 0:
        parser.error('--repeats and --steps must be >= 1, --fit-steps >= 0')
    # MMEngine logs every parameter's initialisation at INFO
    MMLogger.get_current_instance().setLevel(logging.WARNING)
    data = fake_batch(build('focal'), size=tuple(args.size))
    report = dict(
        machine=dict(
            processor=platform.processor() or platform.machine(),
            cpus=os.cpu_count(),
            torch_threads=torch.get_num_threads(),
            load_average=os.getloadavg(),
            torch=torch.__version__),
        batch=dict(images=2, size=args.size))
    t0 = time.perf_counter()
    for part in args.parts:
        report[part] = globals()[part](args, data)
    report['machine']['load_average_end'] = os.getloadavg()
    report['seconds'] = time.perf_counter() - t0
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + '.json', 'w') as f:
        json.dump(report, f, indent=1)
    progress(f'wrote {args.out}.json ({report["seconds"]:.0f} s)')


if __name__ == '__main__':
    main()
