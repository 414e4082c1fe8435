"""Reading a VOC split's ground truth and ``tools/test.py --out`` detections
as plain arrays, for the analyses that MMDetection's ``VOCMetric`` does not
do (calibration, pictures)."""
import os.path as osp
import pickle
from typing import Dict, List, Sequence, Tuple
from xml.etree import ElementTree as ET

import numpy as np

__all__ = ['load_voc_ground_truth', 'load_detections']


def load_voc_ground_truth(data_root: str, split: str,
                          classes: Sequence[str],
                          year: str = 'VOC2007') -> Tuple[List[str], list]:
    """Image ids and ground truth of a VOC split, read from the XML files.

    Args:
        data_root (str): The ``VOCdevkit`` directory.
        split (str): ``ImageSets/Main/<split>.txt`` to read.
        classes (sequence[str]): Class names in label order; objects of
            other classes are skipped.
        year (str): Sub-directory of the year. Defaults to ``'VOC2007'``.

    Returns:
        tuple: ``ids`` and, per image, a dict of ``bboxes`` (K, 4) in
        MMDetection's 0-based corners (``VOCDataset`` subtracts 1 from VOC's
        1-based ones), ``labels`` (K,) and ``difficult`` (K,) bool.
    """
    classes = tuple(classes)
    base = osp.join(data_root, year)
    list_path = osp.join(base, 'ImageSets', 'Main', f'{split}.txt')
    with open(list_path, encoding='utf-8') as f:
        ids = [line.strip() for line in f if line.strip()]
    gts = []
    for img_id in ids:
        path = osp.join(base, 'Annotations', f'{img_id}.xml')
        boxes, labels, difficult = [], [], []
        for obj in ET.parse(path).findall('object'):
            name = obj.findtext('name')
            if name not in classes:
                continue
            bb = obj.find('bndbox')
            boxes.append([float(bb.findtext(k)) - 1
                          for k in ('xmin', 'ymin', 'xmax', 'ymax')])
            labels.append(classes.index(name))
            difficult.append(obj.findtext('difficult') == '1')
        gts.append(dict(bboxes=np.array(boxes).reshape(-1, 4),
                        labels=np.array(labels, dtype=int),
                        difficult=np.array(difficult, dtype=bool)))
    return ids, gts


def load_detections(pkl_path: str) -> Dict[str, dict]:
    """``{image id: {bboxes, scores, labels}}`` (numpy) from the results
    file of ``tools/test.py --out``.

    The image id is the file name without directory and extension (a VOC
    id, as in ``ImageSets/Main/<split>.txt``), which is how the analyses
    match detections to :func:`load_voc_ground_truth`. Two results whose
    images share that id (``a/0001.jpg`` and ``b/0001.png``, or the same
    image twice) cannot both be kept under it: a ``ValueError`` names both
    files and the id, rather than one silently replacing the other.
    """
    with open(pkl_path, 'rb') as f:
        results = pickle.load(f)
    out, paths = {}, {}
    for item in results:
        pred = item['pred_instances']
        img_path = item['img_path']
        img_id = osp.splitext(osp.basename(img_path))[0]
        if img_id in paths:
            first = paths[img_id]
            what = (f'holds the image {img_path} twice' if first == img_path
                    else f'holds two images with the file stem {img_id!r}: '
                    f'{first} and {img_path}')
            raise ValueError(
                f'{pkl_path} {what}; detections are keyed by image id (the '
                'file name without directory and extension), so each image '
                'of the evaluated split must have its own id')
        paths[img_id] = img_path
        out[img_id] = {
            k: np.asarray(pred[k].cpu() if hasattr(pred[k], 'cpu') else
                          pred[k])
            for k in ('bboxes', 'scores', 'labels')
        }
    return out
