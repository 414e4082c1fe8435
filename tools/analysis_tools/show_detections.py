#!/usr/bin/env python
"""Draws the ground truth and the detections of several runs side by side.

    python tools/analysis_tools/show_detections.py OUT.png --data-root \
        data/digits_voc/VOCdevkit --run "CE=work_dirs/.../lr0.04_seed0" ...

A RUN is a ``tools/study.py`` run directory (``eval_<split>/
detections.pkl``) or the ``.pkl``; nothing is re-run. Boxes are drawn by
``DetLocalVisualizer`` at ``--score-thr``; ``--platt`` adds a column per
run with its scores mapped by the study's val Platt fit (``result.json``):
same order, another threshold meaning.
"""
import argparse
import os.path as osp
from typing import List, Tuple

import numpy as np

from mmdet_rankloss.evaluation import (apply_platt, load_detections,
                                       load_voc_ground_truth)
from rankloss_lab.datasets.digits_voc import DIGIT_CLASSES
from rankloss_lab.runner import read_json


def parse_run(text: str, split: str) -> Tuple[str, str, object]:
    """``LABEL=PATH`` -> (label, detections pkl, Platt (a, b) or None)."""
    label, sep, path = text.partition('=')
    if not sep or not label or not path:
        raise SystemExit(f'--run must be LABEL=PATH, got {text!r}')
    if osp.isdir(path):
        pkl = osp.join(path, f'eval_{split}', 'detections.pkl')
        result = osp.join(path, 'result.json')
    else:
        pkl, result = path, None
    if not osp.isfile(pkl):
        raise SystemExit(f'--run {label}: no detections file {pkl}')
    record = read_json(result) if result else None
    platt = (record or {}).get('calibration', {}).get('platt')
    return label, pkl, platt


def draw(visualizer, image: np.ndarray, boxes, labels, scores,
         thr: float) -> np.ndarray:
    """One panel: boxes (and scores) above ``thr`` on the image."""
    import torch
    from mmengine.structures import InstanceData

    from mmdet.structures import DetDataSample
    sample, inst = DetDataSample(), InstanceData()
    inst.bboxes = torch.as_tensor(boxes, dtype=torch.float32).reshape(-1, 4)
    inst.labels = torch.as_tensor(labels, dtype=torch.long)
    if scores is None:
        sample.gt_instances = inst
    else:
        inst.scores = torch.as_tensor(scores, dtype=torch.float32)
        sample.pred_instances = inst
    visualizer.add_datasample(
        'panel', image, sample, draw_gt=scores is None,
        draw_pred=scores is not None, pred_score_thr=thr)
    return visualizer.get_image()


def titled(panel: np.ndarray, title: str, height: int = 18) -> np.ndarray:
    from PIL import Image, ImageDraw
    canvas = Image.new('RGB', (panel.shape[1], panel.shape[0] + height),
                       'white')
    canvas.paste(Image.fromarray(panel), (0, height))
    ImageDraw.Draw(canvas).text((3, 3), title, fill='black')
    return np.asarray(canvas)


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('out')
    parser.add_argument('--data-root', default='data/digits_voc/VOCdevkit')
    parser.add_argument('--split', default='test')
    parser.add_argument('--run', action='append', required=True)
    parser.add_argument('--num-images', type=int, default=6)
    parser.add_argument('--first-image', type=int, default=0)
    parser.add_argument('--score-thr', type=float, default=0.3)
    parser.add_argument('--platt', action='store_true')
    parser.add_argument('--scale', type=int, default=3)
    args = parser.parse_args(argv)
    from PIL import Image

    from mmdet.visualization import DetLocalVisualizer

    runs = [parse_run(text, args.split) for text in args.run]
    ids, gts = load_voc_ground_truth(args.data_root, args.split,
                                     DIGIT_CLASSES)
    chosen = list(range(args.first_image,
                        min(len(ids), args.first_image + args.num_images)))
    if not chosen:
        raise SystemExit(f'no images from index {args.first_image}')
    visualizer = DetLocalVisualizer(line_width=2, alpha=0.9)
    visualizer.dataset_meta = dict(classes=DIGIT_CLASSES, palette=[
        (230, 25, 75), (60, 180, 75), (0, 130, 200), (245, 130, 48),
        (145, 30, 180), (70, 240, 240), (240, 50, 230), (210, 245, 60),
        (128, 0, 0), (0, 0, 128)])
    detections = [(label, load_detections(pkl), platt)
                  for label, pkl, platt in runs]
    s = args.scale
    rows: List[np.ndarray] = []
    for index in chosen:
        img_id = ids[index]
        path = osp.join(args.data_root, 'VOC2007', 'JPEGImages',
                        f'{img_id}.jpg')
        image = Image.open(path).convert('RGB')
        image = np.asarray(image.resize((image.width * s, image.height * s),
                                        Image.NEAREST))
        gt = gts[index]
        panels = [titled(draw(visualizer, image, gt['bboxes'] * s,
                              gt['labels'], None, 0), f'{img_id}: truth')]
        for label, dets, platt in detections:
            det = dets[img_id]
            columns = [(label, det['scores'])]
            if args.platt and platt is not None:
                columns.append((f'{label}, Platt',
                                apply_platt(det['scores'], *platt)))
            for title, scores in columns:
                panels.append(titled(
                    draw(visualizer, image, det['bboxes'] * s, det['labels'],
                         scores, args.score_thr),
                    f'{title} >= {args.score_thr:g}'))
        rows.append(np.concatenate(panels, axis=1))
    Image.fromarray(np.concatenate(rows, axis=0)).save(args.out)
    print(f'wrote {args.out}: {len(chosen)} images x {len(panels)} panels')
    return args.out


if __name__ == '__main__':
    main()
