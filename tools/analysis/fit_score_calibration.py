#!/usr/bin/env python
"""Fits a monotone score calibration on validation detections.

    python tools/test.py CONFIG CKPT --out val.pkl \
        --cfg-options test_dataloader.dataset.ann_file=.../val.txt
    python tools/analysis/fit_score_calibration.py val.pkl \
        --data-root data/digits_voc/VOCdevkit [--split val] [--classes voc]

Matches the detections to the VOC ground truth as VOC AP50 does, fits
``p' = sigmoid(a * logit(p) + b)`` (Platt) and prints D-ECE and precision /
recall at 0.05, 0.3 and 0.5 before and after, and the config line that
stores the fit with a RaMBO model (``RaMBOAPLoss(calibration=(a, b))``,
applied at test time; rankings and AP do not change). Fit on val, never on
the split you report.
"""
import argparse
import os.path as osp
import sys

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
sys.path.insert(0, osp.join(ROOT, 'tools'))
sys.path.insert(0, ROOT)

from study import THRESHOLDS, load_detections, load_ground_truth  # noqa

from mmdet_rankloss.evaluation.calibration import (  # noqa: E402
    apply_platt, expected_calibration_error, fit_platt, match_detections,
    precision_recall_at)


def main(argv=None) -> tuple:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('detections', help='tools/test.py --out file')
    parser.add_argument('--data-root', required=True)
    parser.add_argument('--split', default='val')
    parser.add_argument('--classes', choices=('digits', 'voc'),
                        default='digits')
    args = parser.parse_args(argv)
    classes = None
    if args.classes == 'voc':
        from mmdet.datasets import VOCDataset
        classes = VOCDataset.METAINFO['classes']
    ids, gts = load_ground_truth(args.data_root, args.split, classes)
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
        at = precision_recall_at(s, is_tp, num_gt, THRESHOLDS)
        cells = ', '.join(f'P/R@{t:g} {100 * v["precision"]:.1f}/'
                          f'{100 * v["recall"]:.1f}' for t, v in at.items())
        print(f'{name:>10}: D-ECE {expected_calibration_error(s, is_tp):.3f}'
              f', {cells}')
    print('store it with the model (RaMBOAPLoss):\n  --cfg-options '
          f'model.roi_head.bbox_head.loss_cls.calibration="({a:.4f}, '
          f'{b:.4f})"')
    return a, b


if __name__ == '__main__':
    main()
