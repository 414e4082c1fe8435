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

    python -m rankloss_lab.analysis.rambo_step_share --steps 3 --out work_dirs/rambo_step_share.json
"""
import argparse
import json
import os
import torch
from mmengine.config import Config

import mmdet_rankloss  # noqa: F401
from rankloss_lab.step_timing import (fake_batch, loss_only_time,
                                     median_step_time)
from mmdet.registry import MODELS
from rankloss_lab.paths import ROOT

CONFIGS = dict(
    ce='configs/rambo/faster-rcnn_r50_fpn_ce_1x_voc0712.py',
    rambo='configs/rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py')


def build(name):
    cfg = Config.fromfile(os.path.join(ROOT, CONFIGS[name]))
    cfg.model.backbone.init_cfg = None
    model = MODELS.build(cfg.model)
    model.init_weights()
    return model.train()


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
        result[f'{name}_step_s'] = median_step_time(model, data, args.steps)
        result[f'{name}_loss_cls_s'], shape = loss_only_time(
            model, data, model.roi_head.bbox_head.loss_cls)
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
