"""The splits of a config read for fits made after training: the ground
truth of a dataloader's dataset, ``tools/test.py --out`` detections matched
to its images, and the check that a split is held out."""
import os.path as osp
import pickle
from typing import List, Optional, Sequence, Tuple

import numpy as np

__all__ = ['build_dataset', 'dataset_ground_truth', 'dataset_images',
           'check_held_out', 'load_results', 'detections_for', 'load_config',
           'split_ground_truth', 'child_config']


def _without_pipelines(cfg):
    """A dataset config with every ``pipeline`` emptied (wrappers too)."""
    if isinstance(cfg, dict):
        out = {k: _without_pipelines(v) for k, v in cfg.items()}
        if 'pipeline' in out:
            out['pipeline'] = []
        return out
    if isinstance(cfg, (list, tuple)):
        return type(cfg)(_without_pipelines(v) for v in cfg)
    return cfg


def build_dataset(dataset_cfg):
    """The dataset of a dataloader config, built without its pipeline."""
    from mmdet.registry import DATASETS
    cfg = dataset_cfg.to_dict() if hasattr(dataset_cfg, 'to_dict') else \
        dict(dataset_cfg)
    return DATASETS.build(_without_pipelines(cfg))


def _norm(path: str) -> str:
    return osp.normpath(osp.abspath(path))


def dataset_ground_truth(dataset) -> Tuple[list, List[dict], List[str]]:
    """``(img_ids, ground truths, img_paths)`` of a built detection dataset
    (``ignore_flag`` boxes as ``difficult``)."""
    ids, gts, paths = [], [], []
    for i in range(len(dataset)):
        info = dataset.get_data_info(i)
        instances = info.get('instances', [])
        ids.append(info['img_id'])
        paths.append(info['img_path'])
        gts.append(dict(
            bboxes=np.array([x['bbox'] for x in instances],
                            dtype=np.float64).reshape(-1, 4),
            labels=np.array([x['bbox_label'] for x in instances], dtype=int),
            difficult=np.array([bool(x.get('ignore_flag', 0))
                                for x in instances], dtype=bool)))
    return ids, gts, paths


def dataset_images(dataset_cfg) -> set:
    """The image paths a dataloader's dataset reads (wrappers included)."""
    dataset = build_dataset(dataset_cfg)
    return {_norm(dataset.get_data_info(i)['img_path'])
            for i in range(len(dataset))}


def check_held_out(cfg, config: str, paths: Sequence[str]) -> None:
    """Stops if a calibration image is a training or test image of ``cfg``."""
    mine = {_norm(p) for p in paths}
    for loader, why in (
            ('train_dataloader',
             'the model trained on them, so their scores are better than '
             'on new images'),
            ('test_dataloader',
             'that is the split you report: fit on other images')):
        if not cfg.get(loader):
            continue
        overlap = sorted(mine & dataset_images(cfg[loader]['dataset']))
        if overlap:
            raise SystemExit(
                f'{len(overlap)} of the {len(mine)} calibration images '
                f'(val_dataloader of {config}) are also read by its '
                f'{loader}, e.g. {overlap[0]}: {why}. Hold out a split '
                '(docs/thresholds.md, "Which split to hold out"), or point '
                'val_dataloader at one with --cfg-options')


def load_results(pkl_path: str) -> List[dict]:
    """``tools/test.py --out`` results as dicts of ``img_id``, ``img_path``
    and numpy ``bboxes``, ``scores``, ``labels``."""
    with open(pkl_path, 'rb') as f:
        results = pickle.load(f)
    out = []
    for item in results:
        pred = item['pred_instances']
        out.append(dict(
            img_id=item.get('img_id'), img_path=item.get('img_path'),
            **{k: np.asarray(pred[k].cpu() if hasattr(pred[k], 'cpu') else
                             pred[k]) for k in ('bboxes', 'scores',
                                                'labels')}))
    return out


def _stem(path: Optional[str]) -> Optional[str]:
    return None if path is None else osp.splitext(osp.basename(path))[0]


def detections_for(results: List[dict], ids: list, paths: List[str]
                   ) -> Tuple[List[Optional[dict]], str, list]:
    """Each image's detections (None when the results lack it), how they
    were matched, and the results' images the split lacks; matched by file
    name where each names one image, else by the whole path; by ``img_id``
    (not trusted: two annotation files may number a split differently) only
    for results without file names."""
    if all(r.get('img_path') for r in results):
        stems = [_stem(p) for p in paths]
        r_stems = [_stem(r['img_path']) for r in results]
        if len(set(stems)) == len(stems) and \
                len(set(r_stems)) == len(r_stems):
            keys, r_keys, key = stems, r_stems, 'file name'
        else:
            keys, key = [_norm(p) for p in paths], 'path'
            r_keys = [_norm(r['img_path']) for r in results]
        names = [r['img_path'] for r in results]
    else:
        keys, key = list(ids), 'img_id'
        r_keys = names = [r.get('img_id') for r in results]
    by_key = dict(zip(r_keys, results))
    mine = set(keys)
    extra = [n for k, n in zip(r_keys, names) if k not in mine]
    return [by_key.get(k) for k in keys], key, extra


def load_config(config: str, cfg_options: Optional[dict] = None):
    """``config`` with ``--cfg-options`` merged, its default scope set."""
    from mmengine.config import Config
    from mmengine.registry import init_default_scope

    import mmdet_rankloss  # noqa: F401  (datasets, mmdet_rankloss:: bases)
    cfg = Config.fromfile(config)
    if cfg_options:
        cfg.merge_from_dict(cfg_options)
    init_default_scope(cfg.get('default_scope', 'mmdet'))
    return cfg


def split_ground_truth(cfg, config: str, loader: str, detections: str,
                       held_out: bool = True):
    """``(detections, ground truths, description, classes)`` of the
    dataset of ``cfg[loader]`` and the ``tools/test.py --out`` file
    ``detections`` of it; with ``held_out``, :func:`check_held_out`."""
    if not cfg.get(loader):
        raise SystemExit(f'{config} has no {loader}')
    dataset = build_dataset(cfg[loader].dataset)
    ids, gts, paths = dataset_ground_truth(dataset)
    split = loader.replace('_dataloader', '')
    if not ids:
        raise SystemExit(f'the {loader} of {config} has no images')
    if held_out:
        check_held_out(cfg, config, paths)
    results = load_results(detections)
    dets, key, extra = detections_for(results, ids, paths)
    missing = [p for p, d in zip(paths, dets) if d is None]
    if missing:
        raise SystemExit(
            f'{detections}: no detections for {len(missing)} of the '
            f'{len(ids)} {split} images (matched by {key}), e.g. '
            f'{", ".join(missing[:3])}: run tools/test.py on the same '
            'split')
    if extra:
        raise SystemExit(
            f'{detections}: {len(extra)} of its {len(results)} images are '
            f'not among the {len(ids)} {split} images of {config} (matched '
            f'by {key}), e.g. {", ".join(map(str, extra[:3]))}: run '
            'tools/test.py on the same split')
    ann = cfg[loader].dataset.get('ann_file', '')
    return (dets, gts, f'{type(dataset).__name__} {ann}'.strip(),
            tuple(dataset.metainfo['classes']))


def child_config(path: str, base: str, body: str) -> str:
    """The text of a config at ``path`` inheriting ``base``, plus ``body``."""
    rel = osp.relpath(osp.abspath(base), osp.dirname(osp.abspath(path)))
    return f"_base_ = '{rel}'\n\n{body}"
