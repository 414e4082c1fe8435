#!/usr/bin/env python
"""Chooses a score threshold per class and a calibration on val, and judges
them on another split.

    python tools/test.py CONFIG CKPT --out val.pkl --cfg-options \
        test_dataloader.dataset.ann_file=VAL test_evaluator.ann_file=VAL_JSON
    python tools/test.py CONFIG CKPT --out test.pkl
    python tools/analysis_tools/fit_class_thresholds.py val.pkl \
        --config CONFIG --test test.pkl [--calibration isotonic|platt|none] \
        [--write-config OUT.py] [--cfg-options KEY=VALUE ...]

Works for every detector whatever its loss. What it chooses, fits, reports
and writes (a config with ``ClassScoreThresholdHook``):
docs/thresholds.md#per-class-thresholds-and-a-calibration-for-any-model.
It matches detections to a split's images by file name, not by id
(``rankloss_lab.held_out.detections_for``), and stops on an image of the
split without detections, detections of an image not in it, or a val image
that is also a training or test image of the config.
"""
import argparse
from typing import Dict, List, Optional, Sequence

import numpy as np

from mmdet_rankloss.evaluation import (apply_isotonic, apply_platt,
                                       class_matches,
                                       expected_calibration_error,
                                       fit_isotonic, fit_platt, keep_above,
                                       laece_targets, localisation_aware_ece,
                                       lrp_at_thresholds,
                                       lrp_optimal_thresholds,
                                       match_detections)
from rankloss_lab.held_out import child_config, load_config, split_ground_truth

#: A threshold every class gets in the comparison row (MMDetection's
#: visualiser's default).
DISPLAY_THRESHOLD = 0.3


def choose_thresholds(dets: Sequence[dict], gts: Sequence[dict],
                      num_classes: int) -> List[Optional[dict]]:
    """Each class's LRP-optimal threshold on the given split (None for a
    class without objects there)."""
    return lrp_optimal_thresholds(class_matches(dets, gts, num_classes))


def as_list(optimal: Sequence[Optional[dict]]) -> List[float]:
    """Per class the threshold to apply (``-inf``: not thresholded)."""
    return [-np.inf if o is None else o['threshold'] for o in optimal]


def fit_calibrations(dets: Sequence[dict], gts: Sequence[dict]) -> dict:
    """Platt and isotonic maps fitted to LaECE_0's IoU targets of
    ``dets`` (already thresholded), as the hook's ``calibration`` dicts;
    a fit the data cannot support is left out, with the reason."""
    scores, targets, _ = laece_targets(dets, gts)
    fits: Dict[str, object] = {'none': None}
    try:
        a, b = fit_platt(scores, targets)
        fits['platt'] = dict(type='platt', a=a, b=b)
    except ValueError as e:
        fits['platt'] = f'no Platt fit: {e}'
    if scores.size:
        x, y = fit_isotonic(scores, targets)
        fits['isotonic'] = dict(type='isotonic', x=x.tolist(),
                                y=y.tolist())
    else:
        fits['isotonic'] = 'no isotonic fit: no box kept on val'
    return fits


def calibrated(scores: np.ndarray, calibration: Optional[dict]) -> np.ndarray:
    """``scores`` through a calibration dict of :func:`fit_calibrations`."""
    if calibration is None:
        return scores
    if calibration['type'] == 'platt':
        return apply_platt(scores, calibration['a'], calibration['b'])
    return apply_isotonic(scores, np.asarray(calibration['x']),
                          np.asarray(calibration['y']))


def evaluate(dets: Sequence[dict], gts: Sequence[dict], num_classes: int,
             thresholds: Sequence[float], fits: dict) -> Dict[str, dict]:
    """What a threshold setting gives on a split: ``boxes`` per image,
    LRP and its parts (:func:`lrp_at_thresholds`), D-ECE (VOC matching
    at 0.5) and LaECE_0 of the kept boxes under each fit."""
    out = {}
    rows = (('as given', [-np.inf] * num_classes),
            (f'{DISPLAY_THRESHOLD:g} for all', [DISPLAY_THRESHOLD] *
             num_classes),
            ('per class (val)', list(thresholds)))
    matches = class_matches(dets, gts, num_classes)
    for name, thr in rows:
        kept = keep_above(dets, thr)
        lrp = lrp_at_thresholds(matches, thr)
        scores, is_tp, _ = match_detections(kept, gts)
        s, t, labels = laece_targets(kept, gts)
        row = dict(boxes=sum(len(d['scores']) for d in kept) / len(kept),
                   **{k: lrp[k] for k in ('LRP', 'LRP_loc', 'LRP_FP',
                                          'LRP_FN')},
                   dece=expected_calibration_error(scores, is_tp))
        for fit, cal in fits.items():
            if cal is None or isinstance(cal, dict):
                row[f'laece_{fit}'] = localisation_aware_ece(
                    calibrated(s, cal), t, labels)
        out[name] = row
    return out


def print_report(classes, optimal, test_lrp, rows, fits, what) -> None:
    print(f'per-class thresholds chosen on val ({what[0]})' +
          (f', LRP on test ({what[1]})' if test_lrp else ''))
    print(f'{"class":>16} {"val gt":>7} {"s*":>9} {"val oLRP":>9}' +
          (f' {"test LRP":>9}' if test_lrp else ''))
    for c, name in enumerate(classes):
        o = optimal[c]
        if o is None:
            print(f'{name:>16} {0:>7d} {"-":>9} {"-":>9}  no val objects: '
                  'not thresholded')
            continue
        cells = (f'{name:>16} {o["num_gt"]:>7d} {o["threshold"]:>9.4g} '
                 f'{o["oLRP"]:>9.4f}')
        if test_lrp:
            r = test_lrp['classes'][c]
            cells += f' {r["LRP"]:>9.4f}' if r else f' {"-":>9}'
        print(cells)
    for fit, cal in fits.items():
        if isinstance(cal, str):
            print(cal)
    if not rows:
        return
    fit_names = [k for k, v in fits.items() if v is None or
                 isinstance(v, dict)]
    print(f'on test ({what[1]}), fitted on val:')
    print(f'{"boxes kept":>18} {"boxes/img":>9} {"LRP":>6} {"loc":>6} '
          f'{"FP":>6} {"FN":>6} {"D-ECE":>6} ' +
          ' '.join(f'{"LaECE0 " + k:>15}' for k in fit_names))
    for name, r in rows.items():
        print(f'{name:>18} {r["boxes"]:>9.2f} {r["LRP"]:>6.3f} '
              f'{r["LRP_loc"]:>6.3f} {r["LRP_FP"]:>6.3f} {r["LRP_FN"]:>6.3f} '
              f'{r["dece"]:>6.3f} ' +
              ' '.join(f'{r["laece_" + k]:>15.3f}' for k in fit_names))


def write_config(path: str, config: str, cfg, classes: Sequence[str],
                 optimal: Sequence[Optional[dict]],
                 calibration: Optional[dict]) -> str:
    """Writes ``path``: ``config`` plus ``ClassScoreThresholdHook`` with
    the thresholds and ``calibration`` after its own ``custom_hooks``."""
    def number(v: float) -> str:
        return "float('inf')" if v == np.inf else repr(float(v))

    thresholds = ', '.join(f'{name!r}: {number(o["threshold"])}'
                           for name, o in zip(classes, optimal)
                           if o is not None)
    hook = (f"dict(type='ClassScoreThresholdHook', thresholds={{"
            f'{thresholds}}}, calibration={calibration!r})')
    hooks = [h.to_dict() if hasattr(h, 'to_dict') else dict(h)
             for h in cfg.get('custom_hooks') or []]
    hooks = [repr(h) for h in hooks
             if h.get('type') != 'ClassScoreThresholdHook']
    body = ',\n    '.join(hooks + [hook])
    text = child_config(
        path, config, '# Per-class score thresholds (LRP-optimal) and a '
        'calibration of the kept\n# scores, chosen on val by '
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
    optimal = choose_thresholds(dets, gts, len(classes))
    thresholds = as_list(optimal)
    fits = fit_calibrations(keep_above(dets, thresholds), gts)
    rows, test_lrp, test_what = {}, None, None
    if args.test:
        t_dets, t_gts, test_what, _ = split_ground_truth(
            cfg, args.config, 'test_dataloader', args.test, held_out=False)
        rows = evaluate(t_dets, t_gts, len(classes), thresholds, fits)
        test_lrp = lrp_at_thresholds(class_matches(t_dets, t_gts,
                                                   len(classes)),
                                     thresholds)
    print_report(classes, optimal, test_lrp, rows, fits,
                 (val_what, test_what))
    if args.write_config:
        chosen = fits[args.calibration]
        if isinstance(chosen, str):
            raise SystemExit(f'--calibration {args.calibration}: {chosen}; '
                             'pass --calibration none')
        write_config(args.write_config, args.config, cfg, classes, optimal,
                     chosen)
        print(f'thresholds and the {args.calibration} calibration written '
              f'to {args.write_config}')
    return dict(classes=classes, optimal=optimal, fits=fits, test=rows)


if __name__ == '__main__':
    main()
