"""Checks of a COCO-format annotation file that name the fault.

MMDetection's ``CocoDataset`` silently drops bad boxes and unknown categories,
shifts labels when a class name is spelled otherwise or the categories are in
another order, and stops on a missing ``area`` or an unreadable image when its
turn comes. :func:`check_coco_file` finds these before training (as
:mod:`.voc_check` for VOC; :class:`~mmdet_rankloss.datasets.CheckedCocoDataset`
runs it). Boxes are COCO's ``[x, y, width, height]``, 0-based pixels, inside
the image up to :data:`BORDER_TOLERANCE` pixel."""
import json
import numbers
import os.path as osp
from typing import Dict, List, NamedTuple, Optional, Sequence

from .voc_check import VOCCheckError, image_size

__all__ = ['CocoCheckError', 'CocoFileReport', 'read_coco_json',
           'check_coco_file', 'BORDER_TOLERANCE']

#: How far (pixels) a box may leave the image before it is a fault.
BORDER_TOLERANCE = 1.0


class CocoCheckError(ValueError):
    """A COCO annotation file or image that cannot be used; the message names
    the file, the entry and the value."""


class CocoFileReport(NamedTuple):
    """What :func:`check_coco_file` found in one annotation file.

    Attributes:
        errors (list[str]): Faults that make the file unusable, each naming the
            file, the entry (image or annotation id) and the value.
        warnings (list[str]): Things a user may not expect (images without
            annotations).
        unknown (list[str]): Annotations of a category in the file that is not
            one of the dataset's classes (MMDetection drops them).
        num_images (int): Images listed in the file."""
    errors: List[str]
    warnings: List[str]
    unknown: List[str]
    num_images: int


def read_coco_json(ann_file: str) -> dict:
    """The content of a COCO annotation file.

    Raises:
        FileNotFoundError: The file does not exist (named).
        CocoCheckError: The file is not valid JSON (named, with the parser's
            line and column) or not a JSON object.
    """
    if not osp.isfile(ann_file):
        raise FileNotFoundError(f'COCO annotation file not found: {ann_file}')
    try:
        with open(ann_file, encoding='utf-8') as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise CocoCheckError(f'{ann_file}: malformed JSON ({e.msg}, line '
                             f'{e.lineno} column {e.colno})') from None
    if not isinstance(data, dict):
        raise CocoCheckError(f'{ann_file}: expected a JSON object with '
                             '"images", "annotations" and "categories", got '
                             f'a {type(data).__name__}')
    return data


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_id(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_coco_file(ann_file: str,
                    img_prefix: str,
                    classes: Sequence[str],
                    check_images: bool = True,
                    decode: bool = False,
                    data: Optional[dict] = None) -> CocoFileReport:
    """Checks a COCO annotation file: its categories against ``classes``,
    its images and every annotation.

    Args:
        ann_file (str): The JSON file.
        img_prefix (str): The directory that ``file_name`` is relative to
            (the dataset's ``data_root`` joined with ``data_prefix['img']``).
        classes (Sequence[str]): The dataset's class names, in label order.
        check_images (bool): Check that each image exists, can be read, is
            not truncated and has the ``width`` and ``height`` the file
            states. Defaults to True.
        decode (bool): Decode all pixels of each image (slow). Defaults to
            False.
        data (dict, optional): The file's content, if already read.

    Returns:
        CocoFileReport: Errors, warnings, annotations of other categories
        and the number of images. A missing or malformed file is an error
        of the report too.
    """
    try:
        data = read_coco_json(ann_file) if data is None else data
    except (FileNotFoundError, CocoCheckError) as e:
        return CocoFileReport([str(e)], [], [], 0)
    errors: List[str] = []
    warnings: List[str] = []
    unknown: List[str] = []
    lists = {}
    for key in ('images', 'annotations', 'categories'):
        value = data.get(key)
        if not isinstance(value, list):
            errors.append(f'{ann_file}: no "{key}" list' + (
                f' (got {type(value).__name__})' if value is not None else
                ''))
            value = []
        lists[key] = value
    if errors:
        return CocoFileReport(errors, [], [], len(lists['images']))
    if not lists['images']:
        errors.append(f'{ann_file}: "images" is empty (no images); check '
                      'ann_file and data_root')
    if not lists['annotations']:
        errors.append(f'{ann_file}: "annotations" is empty (no objects): '
                      'there is nothing to train or evaluate on')
    names = _check_categories(ann_file, lists['categories'], classes, errors)
    images = _check_images(ann_file, lists['images'], img_prefix,
                           check_images, decode, errors)
    used = _check_annotations(ann_file, lists['annotations'], images, names,
                              classes, errors, unknown)
    empty = [i for i in images if i not in used]
    if images and empty and len(empty) < len(images):
        warnings.append(
            f'{ann_file}: {len(empty)} of {len(images)} images have no '
            f'annotation of the dataset\'s classes (e.g. '
            f'{images[empty[0]]["file_name"]!r}); training skips them with '
            'filter_cfg=dict(filter_empty_gt=True)')
    elif images and lists['annotations'] and not used:
        errors.append(f'{ann_file}: no image has an annotation of the '
                      f'dataset\'s classes ({", ".join(classes)})')
    return CocoFileReport(errors, warnings, unknown, len(lists['images']))


def _check_categories(ann_file: str, categories: list,
                      classes: Sequence[str],
                      errors: List[str]) -> Dict[int, str]:
    """``{category id: name}``; faults of the list and of its match with
    the dataset's classes go to ``errors``."""
    names: Dict[int, str] = {}
    seen_names: Dict[str, int] = {}
    for i, cat in enumerate(categories):
        where = f'{ann_file} categories[{i}]'
        if not isinstance(cat, dict) or not _is_id(cat.get('id')) or \
                not isinstance(cat.get('name'), str):
            errors.append(f'{where}: needs an integer "id" and a string '
                          f'"name", got {cat!r}')
            continue
        if cat['id'] in names:
            errors.append(f'{where}: duplicate category id {cat["id"]}')
            continue
        if cat['name'] in seen_names:
            errors.append(
                f'{where}: category name {cat["name"]!r} also has id '
                f'{seen_names[cat["name"]]}; MMDetection would map both ids '
                'to labels and the labels would no longer match the classes')
        names[cat['id']] = cat['name']
        seen_names.setdefault(cat['name'], cat['id'])
    missing = [c for c in classes if c not in seen_names]
    if missing:
        errors.append(
            f'{ann_file}: the dataset\'s classes {missing} are not category '
            f'names of the file (it has: {", ".join(seen_names)}); '
            'MMDetection would drop them silently and shift the labels of '
            'the others. Spell metainfo.classes as the file does')
    order = [name for name in seen_names if name in classes]
    if not missing and order != list(classes):
        errors.append(
            f'{ann_file}: the categories are listed in the order {order}, '
            f'the dataset\'s classes are {list(classes)}: MMDetection numbers '
            'the labels in the file\'s order, so each label would carry '
            'another class\'s name. List metainfo.classes in the file\'s '
            'order')
    return names


def _check_images(ann_file: str, images: list, img_prefix: str,
                  check_images: bool, decode: bool,
                  errors: List[str]) -> Dict[int, dict]:
    """``{image id: image entry}`` of the well-formed entries."""
    found: Dict[int, dict] = {}
    for i, img in enumerate(images):
        where = f'{ann_file} images[{i}]'
        if not isinstance(img, dict):
            errors.append(f'{where}: not an object: {img!r}')
            continue
        if not _is_id(img.get('id')):
            errors.append(f'{where}: needs an integer "id", got '
                          f'{img.get("id")!r}')
            continue
        where = f'{ann_file} image id {img["id"]}'
        if img['id'] in found:
            errors.append(f'{where}: duplicate image id')
            continue
        name = img.get('file_name')
        if not isinstance(name, str) or not name:
            errors.append(f'{where}: missing "file_name"')
            continue
        where += f' ({name!r})'
        size = [img.get('width'), img.get('height')]
        if not all(_is_id(v) and v > 0 for v in size):
            errors.append(f'{where}: "width" and "height" must be positive '
                          f'integers, got width={size[0]!r}, '
                          f'height={size[1]!r}')
            continue
        found[img['id']] = img
        if check_images:
            path = osp.join(img_prefix, name)
            try:
                actual = image_size(path, decode=decode)
            except (FileNotFoundError, VOCCheckError) as e:
                errors.append(f'{where}: {e}')
                continue
            if tuple(actual) != tuple(size):
                errors.append(
                    f'{where}: the file says {size[0]}x{size[1]} (width x '
                    f'height), the image {path} is {actual[0]}x{actual[1]}')
    return found


def _check_annotations(ann_file: str, annotations: list,
                       images: Dict[int, dict], names: Dict[int, str],
                       classes: Sequence[str], errors: List[str],
                       unknown: List[str]) -> set:
    """Checks every annotation; returns the ids of the images that have an
    annotation of the dataset's classes."""
    used = set()
    ann_ids = set()
    for i, ann in enumerate(annotations):
        where = f'{ann_file} annotations[{i}]'
        if not isinstance(ann, dict):
            errors.append(f'{where}: not an object: {ann!r}')
            continue
        if 'id' in ann:
            where += f' (id {ann["id"]})'
            if ann['id'] in ann_ids:
                errors.append(f'{where}: duplicate annotation id '
                              '(MMDetection asserts unique ids)')
            ann_ids.add(ann['id'])
        else:
            errors.append(f'{where}: missing "id"')
        img = images.get(ann.get('image_id'))
        if img is None:
            errors.append(f'{where}: image_id {ann.get("image_id")!r} is not '
                          'an image of the file')
            continue
        where += f' of image {img["file_name"]!r}'
        cat = ann.get('category_id')
        if cat not in names:
            errors.append(f'{where}: unknown category id {cat!r} (the file\'s '
                          f'categories: {_category_list(names)})')
            continue
        if names[cat] not in classes:
            unknown.append(f'{where}: category {cat} ({names[cat]!r}) is not '
                           f'one of the dataset\'s {len(classes)} classes '
                           f'({", ".join(classes)})')
            continue
        if _check_box(ann, where, img, errors):
            if not ann.get('ignore', False):
                used.add(img['id'])
    return used


def _category_list(names: Dict[int, str]) -> str:
    return ', '.join(f'{k} {v!r}' for k, v in names.items()) or 'none'


def _check_box(ann: dict, where: str, img: dict, errors: List[str]) -> bool:
    """A box of four numbers, not empty, inside the image, with a positive
    ``area`` and an ``iscrowd`` of 0 or 1; whether it is usable."""
    box = ann.get('bbox')
    if not isinstance(box, (list, tuple)) or len(box) != 4 or not all(
            _is_number(v) for v in box):
        errors.append(f'{where}: "bbox" must be [x, y, width, height] '
                      f'(four numbers), got {box!r}')
        return False
    x, y, w, h = box
    n = len(errors)
    if w < 1 or h < 1:
        errors.append(f'{where}: empty box, width {w:g} x height {h:g} '
                      '(MMDetection drops boxes under 1 pixel silently)')
    if min(x, y) < -BORDER_TOLERANCE:
        errors.append(f'{where}: box outside the image, (x, y) = '
                      f'({x:g}, {y:g})')
    if x + w > img['width'] + BORDER_TOLERANCE or \
            y + h > img['height'] + BORDER_TOLERANCE:
        errors.append(
            f'{where}: box outside the image, (x + width, y + height) = '
            f'({x + w:g}, {y + h:g}) but the image is '
            f'{img["width"]}x{img["height"]}')
    area = ann.get('area')
    if area is None:
        errors.append(f'{where}: missing "area" (MMDetection reads it; '
                      'width x height for a box)')
    elif not _is_number(area) or area <= 0:
        errors.append(f'{where}: "area" must be a positive number, got '
                      f'{area!r} (MMDetection drops the box silently)')
    if ann.get('iscrowd', 0) not in (0, 1):
        errors.append(f'{where}: "iscrowd" must be 0 or 1, got '
                      f'{ann.get("iscrowd")!r}')
    return len(errors) == n
