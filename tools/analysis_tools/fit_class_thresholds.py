#!/usr/bin/env python
"""Chooses a score threshold per class and a calibration on val, and judges
them on another split.

    python tools/analysis_tools/fit_class_thresholds.py val.pkl \
        --config CONFIG --test test.pkl [--write-config OUT.py]

For any detector (``*.pkl``: ``tools/test.py --out``); by default the
pipeline of Kuzucu et al.'s official calibration code (docs/thresholds.md#
per-class-thresholds-and-a-calibration-for-any-model). It stops on a split
image without detections, detections of another image, or a val image that
the config also trains or tests on.
"""
import argparse
from typing import Dict, List, Optional, Sequence

import numpy as np

from mmdet_rankloss.evaluation import (calibrate_detections, class_matches,
                                       expected_calibration_error,
                                       fit_calibrations, keep_above, laece,
                                       lrp_at_thresholds,
                                       lrp_optimal_thresholds,
                                       match_detections, thresholds_of)
from rankloss_lab.held_out import child_config, load_config, split_ground_truth

#: A threshold every class gets in the comparison row (MMDetection's
#: visualiser's default).
DISPLAY_THRESHOLD = 0.3
#: The calibrations fitted, the one of the row "per class (val)" first.
KINDS = ('none', 'platt', 'isotonic')


def choose_thresholds(dets: Sequence[dict], gts: Sequence[dict],
                      num_classes: int,
                      iou_thr: float = 0.0) -> List[Optional[dict]]:
    """Each class's LRP-optimal threshold on the given split (None for a
    class without objects there)."""
    return lrp_optimal_thresholds(
        class_matches(dets, gts, num_classes, iou_thr), iou_thr)


def fit_pipelines(dets: Sequence[dict], gts: Sequence[dict], num_classes: int,
                  thresholds: Sequence[float], args) -> Dict[str, dict]:
    """Per kind of :data:`KINDS`, fitted on the val boxes ``thresholds``
    keep: ``calibrations`` (per class, None: scores kept), ``after`` (the
    thresholds on the calibrated scores) and ``notes`` (fits not made)."""
    kept = keep_above(dets, thresholds)
    out = {}
    for kind in KINDS:
        cals, notes = fit_calibrations(kept, gts, num_classes, kind,
                                       args.iou_thr, args.pooled)
        after = [-np.inf] * num_classes
        if args.threshold_after_calibration:
            after = thresholds_of(choose_thresholds(
                calibrate_detections(kept, cals), gts, num_classes,
                args.iou_thr), args.no_tp)
        out[kind] = dict(calibrations=cals, after=after, notes=notes)
    return out


def apply_pipeline(dets: Sequence[dict], thresholds: Sequence[float],
                   fit: dict) -> List[dict]:
    """``dets`` thresholded, calibrated and thresholded again (as
    ``ClassScoreThresholdHook``)."""
    return keep_above(calibrate_detections(keep_above(dets, thresholds),
                                           fit['calibrations']),
                      fit['after'])


def evaluate(dets: Sequence[dict], gts: Sequence[dict], num_classes: int,
             thresholds: Sequence[float], fits: Dict[str, dict],
             iou_thr: float = 0.0) -> Dict[str, dict]:
    """What each setting gives on a split: ``boxes`` per image, LRP and its
    parts at ``iou_thr`` (with ``classes``), D-ECE and LaECE of the boxes
    kept, as given and as calibrated."""
    rows = {'as given': dets,
            f'{DISPLAY_THRESHOLD:g} for all':
            keep_above(dets, [DISPLAY_THRESHOLD] * num_classes)}
    for kind in KINDS:
        name = 'per class (val)' if kind == 'none' else f'per class + {kind}'
        rows[name] = apply_pipeline(dets, thresholds, fits[kind])
    out = {}
    for name, kept in rows.items():
        lrp = lrp_at_thresholds(
            class_matches(kept, gts, num_classes, iou_thr),
            [-np.inf] * num_classes, iou_thr)
        scores, is_tp, _ = match_detections(kept, gts)
        out[name] = dict(
            boxes=sum(len(d['scores']) for d in kept) / len(kept),
            **{k: lrp[k] for k in ('LRP', 'LRP_loc', 'LRP_FP', 'LRP_FN',
                                   'classes')},
            dece=expected_calibration_error(scores, is_tp),
            laece=laece(kept, gts, iou_thr))
    return out


def print_report(classes, optimal, rows, fits, what, args) -> None:
    test = rows.get('per class (val)')
    print(f'per-class thresholds chosen on val ({what[0]}) at IoU '
          f'{args.iou_thr:g}' + (f', LRP on test ({what[1]})' if test
                                 else ''))
    print(f'{"class":>16} {"val gt":>7} {"s*":>9} {"val oLRP":>9}' +
          (f' {"test LRP":>9}' if test else ''))
    for c, name in enumerate(classes):
        o = optimal[c]
        if o is None:
            print(f'{name:>16} {0:>7d} {"-":>9} {"-":>9}  no val objects: '
                  'not thresholded')
            continue
        cells = (f'{name:>16} {o["num_gt"]:>7d} {o["threshold"]:>9.4g} '
                 f'{o["oLRP"]:>9.4f}')
        if test:
            r = test['classes'][c]
            cells += f' {r["LRP"]:>9.4f}' if r else f' {"-":>9}'
        if o['threshold'] == np.inf:
            cells += '  no correct val box: ' + (
                'all kept' if args.no_tp == 'keep' else 'none kept')
        print(cells)
    for fit in fits.values():
        for note in fit['notes']:
            print(note)
    if not rows:
        return
    print(f'on test ({what[1]}), fitted on val, at IoU {args.iou_thr:g}:')
    print(f'{"boxes kept":>22} {"boxes/img":>9} {"LRP":>6} {"loc":>6} '
          f'{"FP":>6} {"FN":>6} {"D-ECE":>6} {"LaECE":>6}')
    for name, r in rows.items():
        print(f'{name:>22} {r["boxes"]:>9.2f} {r["LRP"]:>6.3f} '
              f'{r["LRP_loc"]:>6.3f} {r["LRP_FP"]:>6.3f} {r["LRP_FN"]:>6.3f} '
              f'{r["dece"]:>6.3f} {r["laece"]:>6.3f}')


def write_config(path: str, config: str, cfg, classes: Sequence[str],
                 thresholds: Sequence[float], fit: dict,
                 pooled: bool = False) -> str:
    """Writes ``path``: ``config`` plus ``ClassScoreThresholdHook`` with
    ``thresholds`` and ``fit`` (one of :func:`fit_pipelines`), after its
    own ``custom_hooks``."""
    def by_name(values: Sequence[float]) -> str:
        return '{' + ', '.join(
            f'{name!r}: ' + ("float('inf')" if v == np.inf else
                             repr(float(v)))
            for name, v in zip(classes, values) if v != -np.inf) + '}'

    cals = fit['calibrations']
    calibration = cals[0] if pooled else \
        {name: cal for name, cal in zip(classes, cals) if cal} or None
    hook = (f"dict(type='ClassScoreThresholdHook', thresholds="
            f'{by_name(thresholds)}, calibration={calibration!r}, '
            f'calibrated_thresholds={by_name(fit["after"])})')
    hooks = [h.to_dict() if hasattr(h, 'to_dict') else dict(h)
             for h in cfg.get('custom_hooks') or []]
    hooks = [repr(h) for h in hooks
             if h.get('type') != 'ClassScoreThresholdHook']
    body = ',\n    '.join(hooks + [hook])
    text = child_config(
        path, config, '# Per-class score thresholds (LRP-optimal), a '
        'calibration of the kept\n# scores and thresholds on them, chosen '
        'on val by '
        "tools/analysis_tools/fit_class_thresholds.py;\n# the base's own "
        f'custom hooks come first.\ncustom_hooks = [\n    {body},\n]\n')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    return path


def parse_args(argv=None):
    from mmengine.config import DictAction
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('detections',
                        help='tools/test.py --out file of the val split')
    parser.add_argument('--config', required=True,
                        help='the config: its val_dataloader is the split '
                        'to choose on, its test_dataloader the one to '
                        'judge on')
    parser.add_argument('--test', metavar='TEST.pkl',
                        help='tools/test.py --out file of the test split')
    parser.add_argument('--calibration', default='isotonic',
                        choices=('isotonic', 'platt', 'none'),
                        help='the calibration --write-config stores '
                        '(default: isotonic)')
    parser.add_argument('--iou-thr', type=float, default=0.0,
                        help='IoU of a hit for the thresholds, the fits '
                        'and LRP / LaECE (default: 0, the official code)')
    parser.add_argument('--no-tp', choices=('keep', 'drop'), default='keep',
                        help='a class without a correct val box: keep all '
                        'its boxes (default, the official code) or none')
    parser.add_argument('--pooled', action='store_true',
                        help='one calibration for all classes (default: '
                        'one per class, the official code)')
    parser.add_argument('--no-threshold-after-calibration',
                        dest='threshold_after_calibration',
                        action='store_false',
                        help='no second LRP-optimal threshold on the '
                        'calibrated scores (the official code sets one)')
    parser.add_argument('--write-config', metavar='OUT.py',
                        help='write CONFIG plus ClassScoreThresholdHook')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        help='overrides of CONFIG, as in tools/test.py')
    return parser.parse_args(argv)


def main(argv=None) -> dict:
    args = parse_args(argv)
    cfg = load_config(args.config, args.cfg_options)
    dets, gts, val_what, classes = split_ground_truth(
        cfg, args.config, 'val_dataloader', args.detections)
    optimal = choose_thresholds(dets, gts, len(classes), args.iou_thr)
    thresholds = thresholds_of(optimal, args.no_tp)
    fits = fit_pipelines(dets, gts, len(classes), thresholds, args)
    rows, test_what = {}, None
    if args.test:
        t_dets, t_gts, test_what, _ = split_ground_truth(
            cfg, args.config, 'test_dataloader', args.test, held_out=False)
        rows = evaluate(t_dets, t_gts, len(classes), thresholds, fits,
                        args.iou_thr)
    print_report(classes, optimal, rows, fits, (val_what, test_what), args)
    if args.write_config:
        write_config(args.write_config, args.config, cfg, classes,
                     thresholds, fits[args.calibration], args.pooled)
        print(f'thresholds and the {args.calibration} calibration written '
              f'to {args.write_config}')
    return dict(classes=classes, optimal=optimal, thresholds=thresholds,
                fits=fits, test=rows)


if __name__ == '__main__':
    main()
