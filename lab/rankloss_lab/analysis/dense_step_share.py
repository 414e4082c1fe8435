"""What a dense rank loss costs inside a RetinaNet R50 training step.

Builds the VOC07+12 RetinaNet R50-FPN of ``configs/dense/retinanet`` with
each classification loss (focal, Rank & Sort, aLRP; random weights, no
download), runs training steps on a batch of 2 images at VOC size
(1000 x 600) and reports, per loss:

* the median time of a full step (forward, backward, SGD);
* the forward + backward time of the classification loss alone, on the
  step's real scores (all anchors x classes of both images), and its share
  of that loss's step.

The step ratio to focal loss is reported too; on a CPU shared with other
work it is noisier than the in-step share, which is measured in the same
process moments apart.

    python -m rankloss_lab.analysis.dense_step_share --steps 2 --out work_dirs/dense_step_share.json

``--config`` takes another family (a ``{}`` where the loss goes), e.g. the
DigitsVOC ATSS configs at their own input and batch, for the training time
per loss that the study's wall times (taken on a shared machine) blur::

    python -m rankloss_lab.analysis.dense_step_share --steps 20 \
        --config configs/dense/atss/atss_r18-w32_fpn_{}_16e_digitsvoc.py \
        --size 128 128 --batch 8 --losses focal rambo-focal rank-sort alrp
"""
import argparse
import json
import os

import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope

import mmdet_rankloss  # noqa: F401
from rankloss_lab.step_timing import (fake_batch, loss_only_time,
                                     median_step_time)
from mmdet.registry import MODELS
from rankloss_lab.paths import ROOT

CONFIG = 'configs/dense/retinanet/retinanet_r50_fpn_{}_1x_voc0712.py'
LOSSES = ('focal', 'rambo-focal', 'rank-sort', 'alrp')


def build(loss: str, config: str = CONFIG):
    cfg = Config.fromfile(os.path.join(ROOT, config.format(loss)))
    cfg.model.backbone.init_cfg = None
    init_default_scope('mmdet')
    model = MODELS.build(cfg.model)
    model.init_weights()
    return model.train()


def measure(loss: str, steps: int, size=(600, 1000), config: str = CONFIG,
            repeats: int = 5, batch: int = 2) -> dict:
    model = build(loss, config)
    data = fake_batch(model, num_images=batch, size=size,
                      num_classes=model.bbox_head.num_classes)
    step = median_step_time(model, data, steps)
    loss_s, shape = loss_only_time(model, data, model.bbox_head.loss_cls,
                                   repeats=repeats, warmup=1)
    return dict(step_s=step, loss_cls_s=loss_s, scores_shape=list(shape),
                share_of_step=loss_s / step)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=2)
    parser.add_argument('--losses', nargs='+',
                        default=['focal', 'rank-sort', 'alrp'],
                        choices=LOSSES)
    parser.add_argument('--config', default=CONFIG,
                        help='config family, {} for the loss')
    parser.add_argument('--size', type=int, nargs=2, default=[600, 1000],
                        metavar=('H', 'W'))
    parser.add_argument('--batch', type=int, default=2)
    parser.add_argument('--out', default='work_dirs/dense_step_share.json')
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    if '{}' not in args.config:
        parser.error(f'--config needs a {{}} where the loss goes, got '
                     f'{args.config!r}')
    result = dict(threads=torch.get_num_threads(), torch=str(
        torch.__version__), config=args.config, size=args.size,
                  batch=args.batch, losses={})
    for loss in args.losses:
        r = measure(loss, args.steps, tuple(args.size), args.config,
                    batch=args.batch)
        result['losses'][loss] = r
        print(f"{loss}: step {r['step_s']:.2f} s, loss_cls fwd+bwd "
              f"{1e3 * r['loss_cls_s']:.1f} ms on {r['scores_shape']} scores "
              f"= {100 * r['share_of_step']:.1f} % of the step", flush=True)
    base = result['losses'].get('focal')
    if base:
        for r in result['losses'].values():
            r['step_over_focal'] = r['step_s'] / base['step_s']
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as f:
        json.dump(result, f, indent=1)
    print(f'[dense_step_share] {args.out}')
    return result


if __name__ == '__main__':
    main()
