#!/usr/bin/env python
"""Checks the datasets and the losses of a config before a long run.

    python tools/misc/check_dataset.py CONFIG [--decode]

Lists each fault of CONFIG's train, val and test datasets (through
dataset wrappers), one line naming file, field and value, and exits 1 on
any (docs/reliability.md): VOC items through
:func:`~mmdet_rankloss.utils.voc_check.check_voc_item` (unknown classes are
faults unless ``unknown_class='skip'``), other datasets built and every
``img_path`` opened. The model is built: each head's ``loss_cls`` must fit.
"""
import argparse
import os.path as osp
import sys
from typing import Iterator, List, Tuple

VOC_TYPES = ('VOCDataset', 'CheckedVOCDataset')


def parse_args(argv=None):
    from mmengine.config import DictAction
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('config')
    parser.add_argument('--decode', action='store_true',
                        help='decode every image completely (slow)')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        help='override config settings, as in train.py')
    return parser.parse_args(argv)


def leaf_datasets(cfg) -> Iterator[dict]:
    """The dataset configs under dataset wrappers."""
    if 'dataset' in cfg:
        yield from leaf_datasets(cfg['dataset'])
    elif 'datasets' in cfg:
        for sub in cfg['datasets']:
            yield from leaf_datasets(sub)
    else:
        yield cfg


def check_voc(cfg: dict, decode: bool) -> Tuple[int, List[str]]:
    """(items checked, faults) of one VOC dataset config."""
    from mmdet.datasets import VOCDataset
    from mmdet_rankloss.utils.voc_check import check_voc_item
    data_root = cfg.get('data_root', '') or ''
    ann_file = osp.join(data_root, cfg['ann_file'])
    sub_root = osp.join(data_root,
                        cfg.get('data_prefix', {}).get('sub_data_root', ''))
    classes = (cfg.get('metainfo') or {}).get('classes',
                                              VOCDataset.METAINFO['classes'])
    skip_unknown = cfg.get('unknown_class', 'error') == 'skip'
    if not osp.isfile(ann_file):
        return 0, [f'image list not found: {ann_file}']
    with open(ann_file) as f:
        ids = [line.strip() for line in f if line.strip()]
    if not ids:
        return 0, [f'the image list {ann_file} is empty (no image ids)']
    faults = []
    for img_id in ids:
        report = check_voc_item(
            osp.join(sub_root, cfg.get('ann_subdir', 'Annotations'),
                     f'{img_id}.xml'),
            osp.join(sub_root, cfg.get('img_subdir', 'JPEGImages'),
                     f'{img_id}.jpg'), classes, check_image=True,
            decode=decode)
        faults += report.errors
        if not skip_unknown:
            faults += report.unknown
    return len(ids), faults


def check_built(cfg: dict, decode: bool) -> Tuple[int, List[str]]:
    """(items checked, faults) of any other dataset config."""
    from mmdet.registry import DATASETS
    from mmdet_rankloss.utils.voc_check import VOCCheckError, image_size
    cfg = dict(cfg, pipeline=[], lazy_init=False)
    try:
        dataset = DATASETS.build(cfg)
    except Exception as e:  # the dataset's own check, reported as it says
        return 0, [f'{cfg.get("type")}: {type(e).__name__}: {e}']
    faults = []
    for i in range(len(dataset)):
        path = dataset.get_data_info(i).get('img_path')
        if path is None:
            continue
        try:
            image_size(path, decode=decode)
        except (FileNotFoundError, VOCCheckError) as e:
            faults.append(str(e))
    return len(dataset), faults


def check_model(model) -> List[str]:
    """Faults of the ``loss_cls`` of every head of a built model."""
    from mmdet_rankloss.models.head_checks import head_fit_faults
    return head_fit_faults(model)


def build_and_check_model(model_cfg) -> List[str]:
    """The same faults from a config (building raises them)."""
    from mmdet.registry import MODELS
    from mmdet_rankloss.models.head_checks import HeadFitError
    try:
        return check_model(MODELS.build(model_cfg))
    except HeadFitError as e:
        return list(e.faults)


def main(argv=None) -> int:
    args = parse_args(argv)
    from mmdet_rankloss import patches
    patches.enable('head_fit_check')  # a misfit loss_cls fails the build
    from rankloss_lab.held_out import load_config
    cfg = load_config(args.config, args.cfg_options)
    seen, total_items, faults = [], 0, []
    for split in ('train', 'val', 'test'):
        loader = cfg.get(f'{split}_dataloader')
        if not loader:
            continue
        for ds_cfg in leaf_datasets(loader['dataset']):
            ds_cfg = ds_cfg.to_dict() if hasattr(ds_cfg, 'to_dict') else \
                dict(ds_cfg)
            if ds_cfg in seen:
                continue
            seen.append(ds_cfg)
            check = check_voc if ds_cfg.get('type') in VOC_TYPES else \
                check_built
            items, found = check(ds_cfg, args.decode)
            total_items += items
            name = f"{split}: {ds_cfg.get('type')} " \
                   f"{ds_cfg.get('ann_file', '')}"
            print(f'{name}: {items} items, {len(found)} faults')
            faults += found
    if cfg.get('model'):
        found = build_and_check_model(cfg.model)
        print(f'model: {len(found)} faults')
        faults += found
    for fault in faults:
        print(f'FAULT {fault}')
    if faults:
        print(f'{len(faults)} faults in {len(seen)} datasets '
              f'({total_items} items) and the model')
        return 1
    print(f'no faults in {len(seen)} datasets ({total_items} items) and '
          'the model')
    return 0


if __name__ == '__main__':
    sys.exit(main())
