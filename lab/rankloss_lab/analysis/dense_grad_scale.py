"""How large is the RaMBO AP loss's gradient on a dense head, next to focal's?

The dense study (docs/evidence/digitsvoc_dense_retinanet_16e.md) found that
RaMBO alone does not train a from-scratch RetinaNet although most scores
get a gradient. This script
measures the size of that gradient on the logits, for the loss as the dense
configs use it and for mmdet's ``FocalLoss`` (averaged over the positives,
as RetinaHead does), on synthetic batches of a dense head's scale:

* ``prior``: logits -4.595 +- 0.0027, the stock head at initialisation;
* ``spread``: logits -6 +- 2 in random order, a head whose scores have
  moved but do not rank the positives first yet.

It prints, per loss and state, the L2 norm of the gradient on the logits,
its mean size on the positive and on the negative (anchor, class) entries,
and the share of entries with a non-zero gradient.

Run (CPU, about a minute)::

    python -m rankloss_lab.analysis.dense_grad_scale [--anchors 200000]
        [--classes 10] [--positives 300] [--lambdas 0.5 50 5000]
"""
import argparse
from typing import Dict, List

import torch
import torch.nn.functional as F

import mmdet_rankloss  # noqa: F401  (registers the losses)
from mmdet.registry import MODELS

FOCAL = dict(type='FocalLoss', use_sigmoid=True, gamma=2.0, alpha=0.25,
             loss_weight=1.0)


def rambo(space: str, lambda_val: float) -> dict:
    return dict(type='RaMBOAPLoss', score_space=space, margin=0.0, memory=0,
                lambda_val=lambda_val)


def make_batch(anchors: int, classes: int, positives: int, state: str,
               seed: int = 0):
    """Logits (anchors, classes) and labels (anchors,), background = C."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.full((anchors, ), classes, dtype=torch.long)
    pos = torch.randperm(anchors, generator=g)[:positives]
    labels[pos] = torch.randint(0, classes, (positives, ), generator=g)
    noise = torch.randn(anchors, classes, generator=g)
    if state == 'prior':
        logits = -4.595 + 0.0027 * noise
    elif state == 'spread':
        logits = -6.0 + 2.0 * noise
    else:
        raise ValueError(f"state must be 'prior' or 'spread', got {state!r}")
    return logits, labels


def gradient_scale(loss_cfg: dict, logits: torch.Tensor,
                   labels: torch.Tensor) -> Dict[str, float]:
    """Size of the loss's gradient on ``logits``."""
    loss = MODELS.build(loss_cfg)
    num, classes = logits.shape
    x = logits.clone().requires_grad_(True)
    if loss_cfg['type'] == 'FocalLoss':
        num_pos = int((labels < classes).sum())
        total = loss(x, labels, avg_factor=max(num_pos, 1))
    else:
        # the 'logits' space expects the background column of a bbox head
        # (never read); RaMBORetinaHead appends the same zero column
        inp = torch.cat([x, x.new_zeros(num, 1)], 1) \
            if loss_cfg['score_space'] == 'logits' else x
        out = loss(inp, labels)
        total = sum(v for k, v in out.items() if k.startswith('loss'))
    total.backward()
    grad = x.grad
    positive = F.one_hot(labels, classes + 1)[:, :classes].bool()
    return dict(
        l2=float(grad.norm()),
        per_positive=float(grad[positive].abs().mean()),
        per_negative=float(grad[~positive].abs().mean()),
        nonzero=float((grad != 0).float().mean()))


def main(argv: List[str] = None) -> List[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--anchors', type=int, default=200000)
    parser.add_argument('--classes', type=int, default=10)
    parser.add_argument('--positives', type=int, default=300)
    parser.add_argument('--lambdas', type=float, nargs='+', default=[0.5])
    args = parser.parse_args(argv)
    losses = [('focal', FOCAL)]
    for lam in args.lambdas:
        losses += [(f'RaMBO sigmoid lambda {lam:g}', rambo('sigmoid', lam)),
                   (f'RaMBO logits lambda {lam:g}', rambo('logits', lam))]
    rows = []
    print(f'{args.anchors} anchors x {args.classes} classes, '
          f'{args.positives} positives; gradient on the logits')
    print('| state | loss | L2 | mean per positive | mean per negative | '
          'non-zero |')
    print('|---|---|---|---|---|---|')
    for state in ('prior', 'spread'):
        logits, labels = make_batch(args.anchors, args.classes,
                                    args.positives, state)
        for name, cfg in losses:
            row = dict(state=state, loss=name,
                       **gradient_scale(cfg, logits, labels))
            rows.append(row)
            print(f"| {state} | {name} | {row['l2']:.2e} | "
                  f"{row['per_positive']:.2e} | {row['per_negative']:.2e} | "
                  f"{100 * row['nonzero']:.1f} % |", flush=True)
    return rows


if __name__ == '__main__':
    main()
