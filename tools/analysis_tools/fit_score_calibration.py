#!/usr/bin/env python
"""Fits a monotone score calibration on validation detections.

    python tools/analysis_tools/fit_score_calibration.py val.pkl \
        --config CONFIG [--write-config OUT.py [--base CONFIG]]
    python tools/analysis_tools/fit_score_calibration.py val.pkl \
        --data-root data/digits_voc/VOCdevkit [--split val]

``val.pkl``: ``tools/test.py --out`` on the held-out split
(docs/thresholds.md). With ``--config`` it stops on a val image the config
also trains or tests on; ``--data-root`` checks nothing.
"""
import argparse
import os.path as osp
import re
from typing import List, NamedTuple, Optional, Tuple

from mmdet_rankloss.evaluation.calibration import (REPORTED_THRESHOLDS,
                                                   apply_platt,
                                                   expected_calibration_error,
                                                   fit_platt, match_detections,
                                                   precision_recall_at)
from mmdet_rankloss.evaluation.voc_files import (load_detections,
                                                 load_voc_ground_truth)
from rankloss_lab.held_out import child_config, load_config, split_ground_truth

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))

CALIBRATION_LINE = re.compile(r'^score_calibration\s*=.*$', re.MULTILINE)


#: Classification losses whose test scores are already a probability.
PROBABILITY_LOSSES = ('CrossEntropyLoss', 'FocalLoss')
#: The post-processing fit for every other model.
THRESHOLD_TOOL = 'tools/analysis_tools/fit_class_thresholds.py'


class Advice(NamedTuple):
    """Where a calibration can go: ``kind`` ``'store'`` (RaMBO; ``path``
    from ``model`` to its loss), ``'probability'`` (none needed) or
    ``'hook'`` (:data:`THRESHOLD_TOOL`); ``why``: one sentence."""
    kind: str
    path: Optional[List[str]]
    why: str


def _multiplies_centerness(head) -> bool:
    """Whether the head multiplies its test scores by a centerness (as
    MMDetection's ATSS and FCOS heads, not this package's)."""
    from mmdet.registry import MODELS
    from mmdet_rankloss.models.rank_sort_heads import NoCenternessPredictMixin
    head_cls = MODELS.get(head.get('type'))
    return 'loss_centerness' in head and not (
        head_cls is not None and
        issubclass(head_cls, NoCenternessPredictMixin))


def score_advice(model) -> Advice:
    """Where a Platt calibration of ``model`` (a config's dict) can go."""
    from mmengine.registry import init_default_scope

    import mmdet_rankloss  # noqa: F401  (this package's heads)
    init_default_scope('mmdet')
    roi_head = model.get('roi_head')
    head = (roi_head or model).get('bbox_head')
    path = (['roi_head'] if roi_head else []) + ['bbox_head', 'loss_cls']
    if not hasattr(head, 'get') or not hasattr(head.get('loss_cls'), 'get'):
        return Advice('hook', None, 'its classification loss is not at '
                      'model.roi_head.bbox_head.loss_cls or '
                      'model.bbox_head.loss_cls')
    loss = head.loss_cls
    kind = loss.get('type')
    inner = loss.get('aux_loss', {}).get('type') \
        if kind == 'MixedRankLoss' else kind
    if _multiplies_centerness(head):
        return Advice('hook', None, f'its test score ({head.type}) is the '
                      'class probability times the centerness, not a '
                      'probability, and the model has no place for a fit')
    if kind == 'RaMBOAPLoss':
        return Advice('store', path, 'its test score is sigmoid(logit) of '
                      'a RaMBO loss: the order is trained, the scale is not')
    if inner in PROBABILITY_LOSSES:
        return Advice('probability', None, 'its test scores are already '
                      f'the {inner} probability ({kind}): it needs no '
                      'calibration')
    return Advice('hook', None, f'its scores are ranking-trained ({kind}) '
                  'and the loss has no place for a fit')


def calibration_path(base: str) -> List[str]:
    """Keys from ``model`` down to the RaMBO loss of the config ``base``
    (SystemExit for a model that stores no calibration)."""
    from mmengine.config import Config

    import mmdet_rankloss  # noqa: F401  (mmdet_rankloss:: bases)
    advice = score_advice(Config.fromfile(base).model)
    if advice.kind != 'store':
        raise SystemExit(f'{base}: no calibration to write: {advice.why}.' +
                         _instead(advice))
    return advice.path


def _instead(advice: Advice) -> str:
    """What to use for a model that stores no calibration."""
    if advice.kind == 'probability':
        return (' Thresholds still come from measurement on val: '
                f'{THRESHOLD_TOOL} chooses one per class.')
    return (f' {THRESHOLD_TOOL} fits per-class thresholds and a '
            'calibration that ClassScoreThresholdHook applies to the '
            'predictions (--write-config there).')


def write_config(path: str, a: float, b: float,
                 base: Optional[str] = None) -> str:
    """Writes ``(a, b)`` into ``path``: its ``score_calibration`` line,
    or a new config inheriting ``base`` (SystemExit: nowhere to write)."""
    value = f'score_calibration = ({a:.4f}, {b:.4f})'
    if base is None:
        if not osp.isfile(path):
            raise SystemExit(
                f'{path} does not exist: pass --base CONFIG to write a new '
                'config that inherits CONFIG')
        with open(path, encoding='utf-8') as f:
            text = f.read()
        if len(CALIBRATION_LINE.findall(text)) != 1:
            raise SystemExit(
                f'{path}: expected one "score_calibration = ..." line to '
                'replace; pass --base CONFIG to write a new config instead')
        text = CALIBRATION_LINE.sub(value, text)
    else:
        keys = calibration_path(base)
        inner = 'dict(calibration=score_calibration)'
        for key in reversed(keys):
            inner = f'dict({key}={inner})'
        text = child_config(
            path, base, '# Platt calibration of the test scores, fitted on '
            'held-out images by\n# tools/analysis_tools/'
            f'fit_score_calibration.py\n{value}\nmodel = {inner}\n')
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
    return path


def config_ground_truth(args) -> Tuple[list, List[dict], str]:
    """``(detections, ground truths, description)`` of ``--config``'s
    val split."""
    cfg = load_config(args.config, args.cfg_options)
    return split_ground_truth(cfg, args.config, 'val_dataloader',
                              args.detections)[:3]


def voc_ground_truth(args) -> Tuple[list, List[dict], str]:
    """The VOC-only form: ``--data-root`` / ``--split`` / ``--classes``."""
    if args.classes == 'voc':
        from mmdet.datasets import VOCDataset
        classes = VOCDataset.METAINFO['classes']
    else:
        from rankloss_lab.datasets.digits_voc import DIGIT_CLASSES
        classes = DIGIT_CLASSES
    ids, gts = load_voc_ground_truth(args.data_root, args.split, classes)
    dets = load_detections(args.detections)
    extra = sorted(set(dets) - set(ids))
    missing = [i for i in ids if i not in dets]
    if missing:
        raise SystemExit(f'{args.detections}: no detections for '
                         f'{len(missing)} {args.split} images, e.g. '
                         f'{", ".join(missing[:3])}: evaluate the same '
                         'split')
    if extra:
        raise SystemExit(f'{args.detections}: {len(extra)} of its '
                         f'{len(dets)} images are not among the {len(ids)} '
                         f'{args.split} images, e.g. {", ".join(extra[:3])}'
                         ': evaluate the same split')
    return [dets[i] for i in ids], gts, args.split


def parse_args(argv=None):
    from mmengine.config import DictAction
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('detections', help='tools/test.py --out file')
    parser.add_argument('--config', help='read the ground truth and classes '
                        "from this config's val_dataloader (VOC, COCO or any "
                        'detection dataset)')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        help='with --config: overrides, as in tools/test.py')
    parser.add_argument('--data-root',
                        help='VOC-only form: the VOCdevkit directory')
    parser.add_argument('--split', default='val',
                        help='VOC-only form: ImageSets/Main/<split>.txt')
    parser.add_argument('--classes', choices=('digits', 'voc'),
                        default='digits', help='VOC-only form: class names')
    parser.add_argument('--write-config', metavar='OUT.py', help='write the '
                        'fit into this config (see the description)')
    parser.add_argument('--base', metavar='CONFIG', help='with '
                        '--write-config: the config OUT.py inherits '
                        '(default: --config)')
    args = parser.parse_args(argv)
    if (args.config is None) == (args.data_root is None):
        parser.error('give --config CONFIG (any dataset) or --data-root ROOT '
                     '(the VOC-only form), not both')
    if args.cfg_options and not args.config:
        parser.error('--cfg-options needs --config')
    if args.base and not args.write_config:
        parser.error('--base needs --write-config')
    return args


def main(argv=None) -> Tuple[float, float]:
    args = parse_args(argv)
    if args.config:
        dets, gts, what = config_ground_truth(args)
    else:
        dets, gts, what = voc_ground_truth(args)
    scores, is_tp, num_gt = match_detections(dets, gts)
    a, b = fit_platt(scores, is_tp)
    fixed = apply_platt(scores, a, b)
    print(f'{len(scores)} detections, {int(is_tp.sum())} true positives, '
          f'{num_gt} objects ({what})')
    for name, s in (('as trained', scores), ('Platt', fixed)):
        at = precision_recall_at(s, is_tp, num_gt, REPORTED_THRESHOLDS)
        cells = ', '.join(f'P/R@{t:g} {100 * v["precision"]:.1f}/'
                          f'{100 * v["recall"]:.1f}' for t, v in at.items())
        print(f'{name:>10}: D-ECE {expected_calibration_error(s, is_tp):.3f}'
              f', {cells}')
    if args.write_config:
        write_config(args.write_config, a, b, args.base or (
            None if osp.isfile(args.write_config) else args.config))
        print(f'calibration ({a:.4f}, {b:.4f}) written to '
              f'{args.write_config}')
    else:
        print(advice_text(args.config, a, b))
    return a, b


def advice_text(config: Optional[str], a: float, b: float) -> str:
    """What to do with the fit ``(a, b)`` for the model of ``config``
    (None: the VOC-only form, no model known)."""
    value = f'"({a:.4f}, {b:.4f})"'
    if config is None:
        return ('for a RaMBO model (RaMBOAPLoss in a Faster R-CNN or '
                'RetinaNet head), store it with --write-config OUT.py '
                '--base CONFIG, or --cfg-options '
                f'model.roi_head.bbox_head.loss_cls.calibration={value} '
                '(Faster R-CNN) / model.bbox_head.loss_cls.calibration='
                f'{value} (RetinaNet); for any other model: {THRESHOLD_TOOL}')
    from mmengine.config import Config
    advice = score_advice(Config.fromfile(config).model)
    if advice.kind != 'store':
        return f'{config}: {advice.why}.' + _instead(advice)
    keys = '.'.join(advice.path)
    return ('store it with the model (RaMBOAPLoss):\n  --cfg-options '
            f'model.{keys}.calibration={value}\n  or --write-config OUT.py')


if __name__ == '__main__':
    main()
