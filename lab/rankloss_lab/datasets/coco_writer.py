"""Writing instance annotations in the COCO format, one JSON file per
split, a mask as pycocotools' compressed RLE."""
import json
from typing import List, Optional, Sequence, Tuple

import numpy as np

__all__ = ['mask_rle', 'coco_categories', 'coco_annotation',
           'write_coco_json']


def mask_rle(mask: np.ndarray) -> dict:
    """The compressed RLE of a binary (H, W) mask: ``{'size': [H, W],
    'counts': str}``, as COCO's files hold it."""
    from pycocotools import mask as mask_utils
    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    return dict(size=[int(s) for s in rle['size']],
                counts=rle['counts'].decode('ascii'))


def coco_categories(names: Sequence[str], supercategory: str) -> List[dict]:
    """Categories ``1..len(names)`` in the order of ``names``."""
    return [dict(id=i + 1, name=name, supercategory=supercategory)
            for i, name in enumerate(names)]


def coco_annotation(ann_id: int, image_id: int, category_id: int,
                    box: Tuple[int, int, int, int],
                    mask: Optional[np.ndarray] = None,
                    iscrowd: bool = False) -> dict:
    """One COCO annotation of a 0-based inclusive ``box`` ``(xmin, ymin,
    xmax, ymax)``, written ``[x, y, w, h]``; with a ``mask`` ((H, W)
    binary) its RLE ``segmentation`` and pixel count as ``area``, else
    ``area = w * h``; ``iscrowd``: COCO's ignore flag."""
    x0, y0, x1, y1 = (int(v) for v in box)
    w, h = x1 - x0 + 1, y1 - y0 + 1
    ann = dict(id=int(ann_id), image_id=int(image_id),
               category_id=int(category_id), bbox=[x0, y0, w, h],
               area=w * h, iscrowd=int(bool(iscrowd)))
    if mask is not None:
        ann['area'] = int(np.count_nonzero(mask))
        ann['segmentation'] = mask_rle(mask)
    return ann


def write_coco_json(path: str, images: Sequence[dict],
                    annotations: Sequence[dict],
                    categories: Sequence[dict]) -> None:
    """Writes the file, one entry per line (the same input, the same bytes)."""
    with open(path, 'w', encoding='utf-8') as f:
        json.dump(dict(images=list(images), annotations=list(annotations),
                       categories=list(categories)), f, indent=1)
