"""Writing a dataset in the Pascal VOC layout (a year directory,
``<root>/VOC2007``), file by file.

An object is a dict: ``name``, ``box`` (0-based inclusive ``(xmin, ymin,
xmax, ymax)``, written 1-based), ``difficult``, optional ``truncated`` and
``mask`` ((H, W) bool).
"""
import os
import os.path as osp
from typing import Dict, List, Sequence
from xml.etree import ElementTree as ET

import numpy as np

__all__ = ['make_voc_dirs', 'annotation_xml', 'write_voc_item',
           'add_class_flags', 'write_image_sets', 'write_list', 'voc_palette',
           'write_voc_masks']

_SUBDIRS = ('JPEGImages', 'Annotations', 'ImageSets/Main')
_SEGMENTATION_SUBDIRS = ('SegmentationObject', 'SegmentationClass',
                         'ImageSets/Segmentation')


def make_voc_dirs(year_root: str, segmentation: bool = False) -> None:
    """Creates the VOC folders of ``year_root`` (with ``segmentation``, the
    segmentation ones too)."""
    for sub in _SUBDIRS + (_SEGMENTATION_SUBDIRS if segmentation else ()):
        os.makedirs(osp.join(year_root, sub), exist_ok=True)


def annotation_xml(img_id: str, folder: str, size: int,
                   objects: Sequence[dict], database: str) -> ET.ElementTree:
    """The VOC XML of a square ``size`` x ``size`` RGB image ``img_id``
    in ``folder`` (``VOC2007``), of ``objects``, with ``database`` as
    ``<source><database>``."""
    root = ET.Element('annotation')
    ET.SubElement(root, 'folder').text = folder
    ET.SubElement(root, 'filename').text = f'{img_id}.jpg'
    source = ET.SubElement(root, 'source')
    ET.SubElement(source, 'database').text = database
    size_el = ET.SubElement(root, 'size')
    for key, value in (('width', size), ('height', size), ('depth', 3)):
        ET.SubElement(size_el, key).text = str(value)
    ET.SubElement(root, 'segmented').text = '0'
    for obj in objects:
        _object_xml(ET.SubElement(root, 'object'), obj)
    if hasattr(ET, 'indent'):  # Python >= 3.9; layout only
        ET.indent(root)
    return ET.ElementTree(root)


def _object_xml(el: ET.Element, obj: dict) -> None:
    ET.SubElement(el, 'name').text = obj['name']
    ET.SubElement(el, 'pose').text = 'Unspecified'
    ET.SubElement(el, 'truncated').text = str(int(obj.get('truncated', False)))
    ET.SubElement(el, 'difficult').text = str(int(obj['difficult']))
    bndbox = ET.SubElement(el, 'bndbox')
    for key, value in zip(('xmin', 'ymin', 'xmax', 'ymax'), obj['box']):
        ET.SubElement(bndbox, key).text = str(value + 1)


def write_voc_item(year_root: str, img_id: str, img: np.ndarray,
                   objects: Sequence[dict], database: str,
                   quality: int) -> None:
    """Writes ``JPEGImages/<img_id>.jpg`` (JPEG ``quality``) and
    ``Annotations/<img_id>.xml`` of a square uint8 RGB image."""
    from PIL import Image
    Image.fromarray(img).save(
        osp.join(year_root, 'JPEGImages', f'{img_id}.jpg'), quality=quality)
    annotation_xml(img_id, osp.basename(year_root), img.shape[0], objects,
                   database).write(
                       osp.join(year_root, 'Annotations', f'{img_id}.xml'))


def add_class_flags(per_class: Dict[str, List[str]], img_id: str,
                    objects: Sequence[dict]) -> None:
    """Appends the image to every per-class list: ``1`` the class is
    present, ``0`` only as difficult objects, ``-1`` absent (VOC's flags)."""
    for name, lines in per_class.items():
        marks = [o['difficult'] for o in objects if o['name'] == name]
        flag = -1 if not marks else (0 if all(marks) else 1)
        lines.append(f'{img_id} {flag:2d}')


def write_list(path: str, lines: Sequence[str]) -> None:
    """A text file of ``lines``, each ended by a newline."""
    with open(path, 'w', encoding='utf-8') as f:
        f.write(''.join(f'{line}\n' for line in lines))


def write_image_sets(year_root: str, split: str, ids: Sequence[str],
                     per_class: Dict[str, List[str]]) -> None:
    """``<split>.txt`` (the ids) and ``<class>_<split>.txt`` (the lines of
    :func:`add_class_flags`) under ``ImageSets/Main``."""
    main = osp.join(year_root, 'ImageSets', 'Main')
    write_list(osp.join(main, f'{split}.txt'), ids)
    for name, lines in per_class.items():
        write_list(osp.join(main, f'{name}_{split}.txt'), lines)


def voc_palette() -> List[int]:
    """VOC's colour map as a flat list of 768 RGB values (index ``i``: the
    colour whose bits interleave those of ``i``)."""
    palette = []
    for index in range(256):
        rgb, value = [0, 0, 0], index
        for bit in range(8):
            for channel in range(3):
                rgb[channel] |= ((value >> channel) & 1) << (7 - bit)
            value >>= 3
        palette += rgb
    return palette


def write_voc_masks(year_root: str, img_id: str, size: int,
                    objects: Sequence[dict],
                    class_names: Sequence[str]) -> None:
    """``SegmentationObject`` and ``SegmentationClass/<img_id>.png`` under
    ``year_root``: palette PNGs of each pixel's 1-based object index in
    ``objects`` (each with its ``mask``, not overlapping) or 1-based index in
    ``class_names``, 0 background."""
    from PIL import Image
    instance = np.zeros((size, size), np.uint8)
    semantic = np.zeros((size, size), np.uint8)
    for index, obj in enumerate(objects, 1):
        mask = obj['mask']
        if (instance[mask] > 0).any():
            raise ValueError(
                f'write_voc_masks: {img_id}: the mask of object {index} '
                f'({obj["name"]}) overlaps an earlier one')
        instance[mask] = index
        semantic[mask] = class_names.index(obj['name']) + 1
    for folder, values in (('SegmentationObject', instance),
                           ('SegmentationClass', semantic)):
        img = Image.frombytes('P', (size, size), values.tobytes())
        img.putpalette(voc_palette())
        img.save(osp.join(year_root, folder, f'{img_id}.png'))
