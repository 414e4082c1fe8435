"""A test run's detections, kept compactly beside its record, and VOC
AP50 re-scored from them at any score threshold at or above the run's:
exact where the threshold acts on the kept score before NMS (Faster R-CNN,
RetinaNet), not for ATSS and FCOS (they keep the product with the
centerness).
"""
import os.path as osp
from typing import Dict, Optional, Sequence

import numpy as np

from mmdet_rankloss.evaluation.voc_files import (load_detections,
                                                 load_voc_ground_truth)


def save_detections(pkl_path: str, npz_path: str, score_thr: float,
                    ids: Optional[Sequence[str]] = None) -> str:
    """Writes the detections of ``tools/test.py --out`` (``pkl_path``) to
    a compressed ``npz_path``: per image (in the order of ``ids``) its
    number of boxes, then all boxes concatenated, ``bboxes`` and ``scores``
    float32 (float16 would tie boxes the metric orders), ``labels`` int16;
    and ``score_thr``, the threshold the run was tested at."""
    dets = load_detections(pkl_path)
    ids = list(dets) if ids is None else list(ids)
    missing = [i for i in ids if i not in dets]
    if missing:
        raise RuntimeError(f'{pkl_path}: no detections for {len(missing)} '
                           f'images, e.g. {missing[0]}')
    per = [dets[i] for i in ids]
    np.savez_compressed(
        npz_path, ids=np.array(ids), score_thr=np.float64(score_thr),
        counts=np.array([len(d['scores']) for d in per], dtype=np.int32),
        bboxes=np.concatenate([d['bboxes'].reshape(-1, 4) for d in per]
                              ).astype(np.float32),
        scores=np.concatenate([d['scores'] for d in per]).astype(np.float32),
        labels=np.concatenate([d['labels'] for d in per]).astype(np.int16))
    return npz_path


def load_stored(npz_path: str) -> dict:
    """``{ids, score_thr, dets}`` of a file of :func:`save_detections`:
    ``dets`` is ``{image id: {bboxes, scores, labels}}``."""
    with np.load(npz_path) as f:
        ids = [str(i) for i in f['ids']]
        ends = np.cumsum(f['counts'])
        parts = {k: np.split(f[k], ends[:-1]) for k in
                 ('bboxes', 'scores', 'labels')}
        thr = float(f['score_thr'])
    return dict(ids=ids, score_thr=thr, dets={
        i: {k: parts[k][n] for k in parts} for n, i in enumerate(ids)})


def voc_ap50(dets: Dict[str, dict], data_root: str, split: str,
             classes: Sequence[str], score_thr: float = 0.0) -> float:
    """VOCMetric's AP50 (11 points, legacy +1 areas) of ``dets`` (``{image
    id: {bboxes, scores, labels}}``) on a VOC split, of the boxes scoring
    above ``score_thr``; the ground truth read as ``VOCDataset`` reads it."""
    from mmdet.evaluation.functional import eval_map
    ids, gts = load_voc_ground_truth(data_root, split, classes)
    missing = [i for i in ids if i not in dets]
    if missing:
        raise ValueError(f'no detections for {len(missing)} images of '
                         f'{split}, e.g. {missing[0]}')
    anns, results = [], []
    for img_id, gt in zip(ids, gts):
        boxes = np.floor(gt['bboxes'] + 1).astype(np.float32) - 1
        hard = gt['difficult']
        anns.append(dict(bboxes=boxes[~hard], labels=gt['labels'][~hard],
                         bboxes_ignore=boxes[hard],
                         labels_ignore=gt['labels'][hard]))
        d = dets[img_id]
        keep = d['scores'] > score_thr
        boxes, scores, labels = (d['bboxes'][keep], d['scores'][keep],
                                 d['labels'][keep])
        results.append([
            np.hstack([boxes[labels == c], scores[labels == c, None]])
            for c in range(len(classes))])
    return float(eval_map(results, anns, iou_thr=0.5, dataset='voc',
                          logger='silent', eval_mode='11points',
                          use_legacy_coordinate=True)[0])


def rescore_voc_ap50(npz_path: str, data_root: str, split: str,
                     score_thr: float,
                     classes: Optional[Sequence[str]] = None) -> float:
    """:func:`voc_ap50` of the stored detections at ``score_thr`` (at least
    the one they were stored at; default classes: DigitsVOC's)."""
    stored = load_stored(npz_path)
    if score_thr < stored['score_thr']:
        raise ValueError(
            f"{npz_path} holds the detections above score_thr "
            f"{stored['score_thr']:g}: AP50 at {score_thr:g} needs the "
            'boxes it dropped')
    if classes is None:
        from rankloss_lab.datasets.digits_voc import DIGIT_CLASSES
        classes = DIGIT_CLASSES
    return voc_ap50(stored['dets'], data_root, split, classes, score_thr)


def detections_path(record_or_result: str) -> str:
    """Where a run's test detections lie: ``<record>_test_detections.npz``."""
    return osp.splitext(record_or_result)[0] + '_test_detections.npz'
