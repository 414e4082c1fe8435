#!/usr/bin/env python
"""Fits a monotone score calibration on validation detections.

    python tools/test.py CONFIG CKPT --out val.pkl \
        --cfg-options test_dataloader.dataset.ann_file=.../val.txt
    python tools/analysis_tools/fit_score_calibration.py val.pkl \
        --data-root data/digits_voc/VOCdevkit [--split val] [--classes voc]
        [--write-config OUT.py [--base CONFIG]]

Matches the detections to the VOC ground truth as VOC AP50 does, fits
``p' = sigmoid(a * logit(p) + b)`` (Platt) and prints D-ECE (detection
expected calibration error) and precision / recall at 0.05, 0.3 and 0.5
before and after. The fit is stored with a RaMBO model as
``RaMBOAPLoss(calibration=(a, b))`` and applied at test time; rankings and
AP do not change. ``--write-config`` writes it:

* into an existing config that holds a ``score_calibration = ...`` line
  (the quickstart's RaMBO config), replacing that line;
* or, with ``--base CONFIG``, into a new config that inherits ``CONFIG`` and
  sets the calibration of its RaMBO loss.

Fit on val, never on the split you report.
"""
import argparse
import os.path as osp
import re
from typing import List, Optional, Tuple

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))

from mmdet_rankloss.evaluation.calibration import (
    REPORTED_THRESHOLDS, apply_platt, expected_calibration_error, fit_platt,
    match_detections, precision_recall_at)
from mmdet_rankloss.evaluation.voc_files import (
    load_detections, load_voc_ground_truth)

CALIBRATION_LINE = re.compile(r'^score_calibration\s*=.*$', re.MULTILINE)


def calibration_path(base: str) -> List[str]:
    """Keys from ``model`` down to the RaMBO loss of the config ``base``
    (two-stage ``roi_head.bbox_head.loss_cls`` or dense ``bbox_head``)."""
    from mmengine.config import Config

    import mmdet_rankloss  # noqa: F401  (mmdet_rankloss:: bases)
    model = Config.fromfile(base).model
    for path in (['roi_head', 'bbox_head', 'loss_cls'],
                 ['bbox_head', 'loss_cls']):
        node = model
        for key in path:
            node = node.get(key) if hasattr(node, 'get') else None
        if node is not None and node.get('type') == 'RaMBOAPLoss':
            return path
    raise ValueError(f'{base}: no RaMBOAPLoss at model.roi_head.bbox_head.'
                     'loss_cls or model.bbox_head.loss_cls; a calibration is '
                     'for RaMBO-only models (a mix with a cross-entropy or '
                     'focal term already gives probabilities)')


def write_config(path: str, a: float, b: float,
                 base: Optional[str] = None) -> str:
    """Writes ``(a, b)`` into ``path`` (see the module docstring)."""
    value = f'score_calibration = ({a:.4f}, {b:.4f})'
    if base is None:
        if not osp.isfile(path):
            raise FileNotFoundError(
                f'{path} does not exist: pass --base CONFIG to write a new '
                'config that inherits CONFIG')
        with open(path, encoding='utf-8') as f:
            text = f.read()
        if len(CALIBRATION_LINE.findall(text)) != 1:
            raise ValueError(
                f'{path}: expected one "score_calibration = ..." line to '
                'replace; pass --base CONFIG to write a new config instead')
        text = CALIBRATION_LINE.sub(value, text)
    else:
        keys = calibration_path(base)
        inner = 'dict(calibration=score_calibration)'
        for key in reversed(keys):
            inner = f'dict({key}={inner})'
        rel = osp.relpath(osp.abspath(base), osp.dirname(osp.abspath(path)))
        text = (f"_base_ = '{rel}'\n\n"
                '# Platt calibration of the test scores, fitted on val by '
                'tools/analysis_tools/fit_score_calibration.py\n'
                f'{value}\nmodel = {inner}\n')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    return path


def main(argv=None) -> Tuple[float, float]:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('detections', help='tools/test.py --out file')
    parser.add_argument('--data-root', required=True)
    parser.add_argument('--split', default='val')
    parser.add_argument('--classes', choices=('digits', 'voc'),
                        default='digits')
    parser.add_argument(
        '--write-config', metavar='OUT.py',
        help='write the fit into this config (see the description)')
    parser.add_argument(
        '--base', metavar='CONFIG',
        help='with --write-config: the config OUT.py inherits')
    args = parser.parse_args(argv)
    if args.base and not args.write_config:
        parser.error('--base needs --write-config')
    if args.classes == 'voc':
        from mmdet.datasets import VOCDataset
        classes = VOCDataset.METAINFO['classes']
    else:
        from mmdet_rankloss.datasets.digits_voc import DIGIT_CLASSES
        classes = DIGIT_CLASSES
    ids, gts = load_voc_ground_truth(args.data_root, args.split, classes)
    dets = load_detections(args.detections)
    missing = [i for i in ids if i not in dets]
    if missing:
        raise SystemExit(f'{args.detections}: no detections for '
                         f'{len(missing)} {args.split} images, e.g. '
                         f'{missing[0]}: evaluate the same split')
    scores, is_tp, num_gt = match_detections([dets[i] for i in ids], gts)
    a, b = fit_platt(scores, is_tp)
    fixed = apply_platt(scores, a, b)
    print(f'{len(scores)} detections, {int(is_tp.sum())} true positives, '
          f'{num_gt} objects ({args.split})')
    for name, s in (('as trained', scores), ('Platt', fixed)):
        at = precision_recall_at(s, is_tp, num_gt, REPORTED_THRESHOLDS)
        cells = ', '.join(f'P/R@{t:g} {100 * v["precision"]:.1f}/'
                          f'{100 * v["recall"]:.1f}' for t, v in at.items())
        print(f'{name:>10}: D-ECE {expected_calibration_error(s, is_tp):.3f}'
              f', {cells}')
    if args.write_config:
        write_config(args.write_config, a, b, args.base)
        print(f'calibration ({a:.4f}, {b:.4f}) written to '
              f'{args.write_config}')
    else:
        print('store it with the model (RaMBOAPLoss):\n  --cfg-options '
              f'model.roi_head.bbox_head.loss_cls.calibration="({a:.4f}, '
              f'{b:.4f})"\n  or --write-config OUT.py --base CONFIG')
    return a, b


if __name__ == '__main__':
    main()
