"""What the RaMBO loss costs inside a Faster R-CNN R50 training step.

Builds the VOC07+12 Faster R-CNN R50-FPN of ``configs/rambo`` twice (CE and
RaMBO, random weights, no download), runs training steps on a batch of 2
images at VOC size (1000 x 600), and reports:

* the median time of a full step (forward, backward, SGD) with each loss;
* the time spent inside the classification loss of the RoI head (forward
  and backward of ``loss_cls`` alone, on the step's real RoI scores, with
  the tau = 7 memory filled), as a share of the RaMBO step.

The step difference CE vs RaMBO is reported too, but on a CPU it is within
the run-to-run noise of a multi-second step; the in-step loss time is the
precise number.

    python tools/analysis_tools/rambo_step_share.py --steps 3 --out work_dirs/rambo_step_share.json
"""
import argparse
import json
import os
import statistics
import time

import torch
from mmengine.config import Config

import mmdet_rankloss  # noqa: F401
from experiments.step_timing import fake_batch, train_step
from mmdet.registry import MODELS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CONFIGS = dict(
    ce='configs/rambo/faster-rcnn_r50_fpn_ce_1x_voc0712.py',
    rambo='configs/rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py')


def build(name):
    cfg = Config.fromfile(os.path.join(ROOT, CONFIGS[name]))
    cfg.model.backbone.init_cfg = None
    model = MODELS.build(cfg.model)
    model.init_weights()
    return model.train()


def time_steps(model, data, steps):
    opt = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    times = []
    for i in range(steps + 1):  # first step is a warm-up
        t0 = time.perf_counter()
        train_step(model, data, opt)
        if i:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def loss_only_time(model, data, repeats=10):
    """Forward+backward of loss_cls alone on the step's RoI scores."""
    head = model.roi_head.bbox_head
    captured = {}
    original = head.loss_cls.forward

    def capture(cls_score, labels, *args, **kwargs):
        captured.update(cls_score=cls_score.detach(), labels=labels,
                        args=args, kwargs=kwargs)
        return original(cls_score, labels, *args, **kwargs)

    head.loss_cls.forward = capture
    with torch.no_grad():
        model(**data, mode='loss')
    head.loss_cls.forward = original
    score = captured['cls_score']
    g = torch.Generator().manual_seed(0)
    times = []
    for _ in range(repeats + 8):  # the first 8 fill the tau = 7 memory
        # each batch differs, as in training (identical copies in the
        # memory would make every score a tie)
        noise = torch.randn(score.shape, generator=g) * score.std()
        leaf = (score + noise).requires_grad_(True)
        t0 = time.perf_counter()
        out = head.loss_cls(leaf, captured['labels'], *captured['args'],
                            **captured['kwargs'])
        if isinstance(out, dict):
            out = sum(v for k, v in out.items() if 'loss' in k)
        out.backward()
        times.append(time.perf_counter() - t0)
    return statistics.median(times[8:]), tuple(score.shape)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=3)
    parser.add_argument('--out', default='work_dirs/rambo_step_share.json')
    args = parser.parse_args()
    torch.manual_seed(0)
    result = dict(threads=torch.get_num_threads())
    for name in ('ce', 'rambo'):
        model = build(name)
        data = fake_batch(model)
        result[f'{name}_step_s'] = time_steps(model, data, args.steps)
        result[f'{name}_loss_cls_s'], shape = loss_only_time(model, data)
        result['roi_scores_shape'] = shape
        print(f"{name}: step {result[f'{name}_step_s']:.2f} s, loss_cls "
              f"fwd+bwd {result[f'{name}_loss_cls_s']*1e3:.1f} ms on "
              f'{shape} scores', flush=True)
    result['rambo_loss_share_of_step'] = (result['rambo_loss_cls_s'] /
                                          result['rambo_step_s'])
    result['step_ratio_rambo_over_ce'] = (result['rambo_step_s'] /
                                          result['ce_step_s'])
    print(f"RaMBO loss = {100 * result['rambo_loss_share_of_step']:.2f} % of "
          f"the step; step RaMBO / CE = {result['step_ratio_rambo_over_ce']:.3f}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(result, f, indent=1)


if __name__ == '__main__':
    main()
