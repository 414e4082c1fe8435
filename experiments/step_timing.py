"""Synthetic training steps of a detector, timed by the overhead tools
(``tools/analysis_tools/rambo_step_share.py`` and ``input_checks_cost.py``).
"""
import torch
from mmdet.structures import DetDataSample
from mmengine.structures import InstanceData

__all__ = ['fake_batch', 'train_step']


def fake_batch(model, num_images=2, size=(600, 1000), seed=0):
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
            labels=torch.randint(0, 20, (k, ), generator=g))
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
