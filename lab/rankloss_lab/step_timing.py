"""Synthetic training steps of a detector, timed by the overhead measures
(:mod:`rankloss_lab.analysis.rambo_step_share`, ``dense_step_share`` and
``input_checks_cost``).
"""
import statistics
import time

import torch
from mmdet.structures import DetDataSample
from mmengine.structures import InstanceData

__all__ = ['fake_batch', 'train_step', 'median_step_time', 'loss_only_time']


def fake_batch(model, num_images=2, size=(600, 1000), seed=0,
               num_classes=20):
    g = torch.Generator().manual_seed(seed)
    inputs, samples = [], []
    h, w = size
    for _ in range(num_images):
        inputs.append(torch.randint(0, 256, (3, h, w), generator=g,
                                    dtype=torch.uint8))
        k = 4
        xy = torch.rand(k, 2, generator=g) * torch.tensor([w * 0.6, h * 0.6])
        wh = 40 + torch.rand(k, 2, generator=g) * torch.tensor(
            [w * 0.35, h * 0.35])
        s = DetDataSample(metainfo=dict(img_shape=size, ori_shape=size,
                                        scale_factor=(1.0, 1.0)))
        s.gt_instances = InstanceData(
            bboxes=torch.cat([xy, xy + wh], 1),
            labels=torch.randint(0, num_classes, (k, ), generator=g))
        samples.append(s)
    return model.data_preprocessor(dict(inputs=inputs, data_samples=samples),
                                   True)


def train_step(model, data, optimizer):
    """One SGD step on the sum of the model's losses (what a runner's
    train step costs, without its logging)."""
    losses = model(**data, mode='loss')
    total = sum(v.sum() if isinstance(v, torch.Tensor) else sum(v)
                for k, v in losses.items() if 'loss' in k)
    optimizer.zero_grad()
    total.backward()
    optimizer.step()


def median_step_time(model, data, steps: int) -> float:
    """Median seconds of ``steps`` SGD steps, after one warm-up step."""
    opt = torch.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9)
    times = []
    for i in range(steps + 1):
        t0 = time.perf_counter()
        train_step(model, data, opt)
        if i:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def loss_only_time(model, data, loss_module, repeats: int = 10,
                   warmup: int = 8):
    """Median seconds of forward + backward of ``loss_module`` alone, over
    every input it receives in a forward pass of ``model`` on ``data`` (one
    call for a RoI head or a loss over all anchors, one per FPN level for
    MMDetection's dense heads).

    Each repeat adds fresh noise of the scores' own spread (as batches
    differ in training; identical copies in a score memory would make every
    score a tie); the first ``warmup`` repeats are not timed (they fill a
    memory such as RaMBO's tau = 7). Returns (seconds, the shape of the
    scores of one call, or of their concatenation when the calls' scores
    differ only in their first dimension).
    """
    calls = []
    original = loss_module.forward

    def capture(score, *args, **kwargs):
        calls.append((score.detach(), args, kwargs))
        return original(score, *args, **kwargs)

    loss_module.forward = capture
    try:
        with torch.no_grad():
            model(**data, mode='loss')
    finally:
        loss_module.forward = original
    g = torch.Generator().manual_seed(0)
    times = []
    for _ in range(repeats + warmup):
        t0 = 0.0
        for score, args, kwargs in calls:
            noise = torch.randn(score.shape, generator=g) * score.float().std()
            leaf = (score + noise.to(score.dtype)).requires_grad_(True)
            start = time.perf_counter()
            out = loss_module(leaf, *args, **kwargs)
            if isinstance(out, dict):
                out = sum(v for k, v in out.items()
                          if 'loss' in k and isinstance(v, torch.Tensor))
            out.sum().backward()
            t0 += time.perf_counter() - start
        times.append(t0)
    shapes = [tuple(score.shape) for score, _, _ in calls]
    shape = shapes[0] if len(shapes) == 1 else (
        (sum(s[0] for s in shapes), ) + shapes[0][1:])
    return statistics.median(times[warmup:]), shape
