"""What the input checks of the losses cost inside a detector training step.

The data checks that run on every loss call (finite scores, labels in
range, binary masks, embedding shapes) are these functions:

* ``ScoreSpace.check_inputs`` (the detection losses' head inputs);
* ``check_scores_and_masks`` (as called by the AP and recall functions);
* ``check_embeddings_labels`` (the retrieval losses);
* ``ops.ranking._validate`` (the blackbox rank ops called directly).

The script builds a detector config (default: the RaMBO quickstart), makes
one synthetic batch of the config's size and runs full training steps
(forward, backward, SGD) two ways, alternating step by step so that a
change in the machine's load hits both alike:

* **on**: as shipped; every check is wrapped in a timer, which gives the
  time spent inside the checks and how often each is called per step;
* **off**: every check replaced by a no-op (``check_inputs`` keeps only
  the channel arithmetic it returns).

It prints the machine, the median step time of each mode, the median of
the paired differences (on - off) with a bootstrap 95 % interval, and the
median time inside the checks as a share of the step.

    python -m rankloss_lab.analysis.input_checks_cost --pairs 40 --out work_dirs/input_checks_cost.json

On a CPU a host read (``.tolist()``) costs no device synchronisation; on a
GPU each check's single read waits for the queued kernels, which the
backward would wait for anyway, so the CPU share is the fixed cost.
"""
import argparse
import json
import os
import os.path as osp
import random
import statistics
import time
from contextlib import contextmanager

import torch
from rankloss_lab.paths import ROOT

CONFIG = osp.join(ROOT, 'configs', 'quickstart',
                  'faster-rcnn_r18-w32_fpn_rambo_toyvoc.py')


def check_sites():
    """(name, owner object, attribute, no-op) of every per-call data
    check; the owner is where the callers look the function up."""
    from mmdet_rankloss.losses import (average_precision, pairwise,
                                       recall_loss)
    from mmdet_rankloss.losses.score_space import ScoreSpace
    from mmdet_rankloss.ops import ranking

    def no_check(*args, **kwargs):
        return None

    def channels_only(self, cls_score, labels, weight):
        return self.num_classes(cls_score)

    return [
        ('ScoreSpace.check_inputs', ScoreSpace, 'check_inputs',
         channels_only),
        ('check_scores_and_masks (AP)', average_precision,
         'check_scores_and_masks', no_check),
        ('check_scores_and_masks (recall)', recall_loss,
         'check_scores_and_masks', no_check),
        ('check_embeddings_labels', pairwise, 'check_embeddings_labels',
         no_check),
        ('ranking._validate', ranking, '_validate', no_check),
    ]


class CheckTimer:
    """Wraps every check site with a timer (mode 'on') or a no-op ('off')."""

    def __init__(self):
        self.sites = check_sites()
        self.originals = [getattr(owner, attr)
                          for _, owner, attr, _ in self.sites]
        self.seconds = 0.0
        self.calls = {name: 0 for name, *_ in self.sites}

    def _timed(self, name, function):
        timer = self

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                timer.seconds += time.perf_counter() - t0
                timer.calls[name] += 1

        return timed

    @contextmanager
    def mode(self, on):
        for (name, owner, attr, no_op), original in zip(self.sites,
                                                        self.originals):
            setattr(owner, attr, self._timed(name, original) if on else no_op)
        try:
            yield
        finally:
            for (_, owner, attr, _), original in zip(self.sites,
                                                     self.originals):
                setattr(owner, attr, original)


def machine():
    from rankloss_lab.run_logs import machine_name
    load = os.getloadavg() if hasattr(os, 'getloadavg') else None
    return dict(name=machine_name(), cores=os.cpu_count(),
                torch_threads=torch.get_num_threads(), load_average=load)


def build(config, batch_size, image_size):
    import mmdet_rankloss  # noqa: F401
    from mmengine.config import Config
    from mmengine.registry import init_default_scope

    from mmdet.registry import MODELS
    from rankloss_lab.step_timing import fake_batch
    init_default_scope('mmdet')
    cfg = Config.fromfile(config)
    torch.manual_seed(0)
    model = MODELS.build(cfg.model)
    model.init_weights()
    model.train()
    data = fake_batch(model, num_images=batch_size,
                      size=(image_size, image_size))
    return model, data


def step(model, data, optimizer):
    from rankloss_lab.step_timing import train_step
    train_step(model, data, optimizer)


def bootstrap_ci(values, repeats=2000, seed=0):
    rng = random.Random(seed)
    medians = sorted(
        statistics.median(rng.choices(values, k=len(values)))
        for _ in range(repeats))
    return medians[int(0.025 * repeats)], medians[int(0.975 * repeats)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--config', default=CONFIG)
    parser.add_argument('--batch-size', type=int, default=8)
    parser.add_argument('--image-size', type=int, default=128)
    parser.add_argument('--pairs', type=int, default=40)
    parser.add_argument('--warmup', type=int, default=8,
                        help='steps before timing (fills a tau = 7 memory)')
    parser.add_argument('--out', default=None)
    args = parser.parse_args(argv)
    model, data = build(args.config, args.batch_size, args.image_size)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    timer = CheckTimer()
    for _ in range(args.warmup):
        with timer.mode(True):
            step(model, data, optimizer)
    timer.seconds, timer.calls = 0.0, dict.fromkeys(timer.calls, 0)
    on_times, off_times, inside = [], [], []
    for i in range(args.pairs):
        # alternate which mode goes first, so neither always follows the
        # other's allocations
        for on in ((True, False) if i % 2 == 0 else (False, True)):
            with timer.mode(on):
                before = timer.seconds
                t0 = time.perf_counter()
                step(model, data, optimizer)
                elapsed = time.perf_counter() - t0
            (on_times if on else off_times).append(elapsed)
            if on:
                inside.append(timer.seconds - before)
    diffs = [a - b for a, b in zip(on_times, off_times)]
    step_on = statistics.median(on_times)
    result = dict(
        machine=machine(),
        config=osp.relpath(args.config, ROOT),
        batch=f'{args.batch_size} x {args.image_size} px',
        pairs=args.pairs,
        step_on_s=step_on,
        step_off_s=statistics.median(off_times),
        paired_diff_s=statistics.median(diffs),
        paired_diff_ci95_s=bootstrap_ci(diffs),
        inside_checks_s=statistics.median(inside),
        inside_checks_share=statistics.median(inside) / step_on,
        calls_per_step={k: v / args.pairs for k, v in timer.calls.items()})
    m = result['machine']
    load = ', '.join(f'{x:.1f}' for x in m['load_average'] or ())
    print(f"machine: {m['name']} ({m['torch_threads']} torch threads), "
          f'load average {load}')
    print(f"{result['config']}, batch {result['batch']}, {args.pairs} "
          'interleaved pairs (checks on / off, alternating order)')
    print(f'step, median: checks on {step_on * 1e3:.1f} ms, off '
          f"{result['step_off_s'] * 1e3:.1f} ms")
    lo, hi = result['paired_diff_ci95_s']
    print(f"paired on - off, median {result['paired_diff_s'] * 1e3:+.2f} ms "
          f'({100 * result["paired_diff_s"] / step_on:+.2f} % of the step; '
          f'95 % CI {lo * 1e3:+.2f} to {hi * 1e3:+.2f} ms)')
    print(f"inside the checks, median {result['inside_checks_s'] * 1e3:.3f} "
          f"ms per step = {100 * result['inside_checks_share']:.3f} % of "
          'the step')
    print('calls per step: ' + ', '.join(
        f'{k} {v:g}' for k, v in result['calls_per_step'].items() if v))
    if args.out:
        os.makedirs(osp.dirname(osp.abspath(args.out)), exist_ok=True)
        with open(args.out, 'w') as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == '__main__':
    main()
