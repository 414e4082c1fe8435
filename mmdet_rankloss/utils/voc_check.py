"""Checks of one Pascal VOC item (XML annotation + JPEG) that name the fault.

MMDetection's ``VOCDataset`` stops on a malformed XML or a missing field
without naming the file, drops unknown class names silently, trains bad boxes
as they are and stops on an unreadable image when its turn comes.
:func:`check_voc_item` finds these before training
(:class:`~mmdet_rankloss.datasets.CheckedVOCDataset`,
``tools/misc/check_dataset.py``; docs/reliability.md). Coordinates are VOC's,
1-based and inclusive: ``1 <= xmin < xmax <= width``; ``xmin = 0`` (a 0-based
writer) is accepted."""
import os.path as osp
from typing import List, NamedTuple, Optional, Sequence, Tuple
from xml.etree import ElementTree as ET

__all__ = [
    'VOCCheckError', 'VOCItemReport', 'read_voc_xml', 'check_voc_item',
    'image_size'
]

_COORDS = ('xmin', 'ymin', 'xmax', 'ymax')


class VOCCheckError(ValueError):
    """A VOC annotation or image that cannot be used; the message names the
    file, the field and the value."""


class VOCItemReport(NamedTuple):
    """What :func:`check_voc_item` found in one item.

    Attributes:
        errors (list[str]): Faults that make the item unusable, each naming
            the file, field and value.
        warnings (list[str]): Faults the loader works around (a size
            read from the image).
        unknown (list[str]): Objects whose class is not one of the
            dataset's (MMDetection drops them silently); an error or a
            warning, as the caller decides.
        size (tuple[int, int] | None): ``(width, height)`` of the XML (or
            of the image when the XML has no ``<size>``), if known.
    """
    errors: List[str]
    warnings: List[str]
    unknown: List[str]
    size: Optional[Tuple[int, int]]


def read_voc_xml(xml_path: str) -> ET.Element:
    """The root of a VOC XML file.

    Raises:
        FileNotFoundError: The file does not exist (named).
        VOCCheckError: The file is not well-formed XML (named, with the
            parser's line and column).
    """
    if not osp.isfile(xml_path):
        raise FileNotFoundError(f'VOC annotation not found: {xml_path}')
    try:
        return ET.parse(xml_path).getroot()
    except ET.ParseError as e:
        raise VOCCheckError(f'{xml_path}: malformed XML ({e})') from None


def image_size(img_path: str, decode: bool = False) -> Tuple[int, int]:
    """``(width, height)`` of an image, checking that it can be read.

    Reads the header only (fast), and for JPEGs checks that the file ends
    with the end-of-image marker, which a truncated download or copy lacks.
    ``decode=True`` decodes every pixel (slow; what
    ``tools/misc/check_dataset.py --decode`` does).

    Raises:
        FileNotFoundError: The image does not exist (named).
        VOCCheckError: The image cannot be read, or is truncated (named).
    """
    from PIL import Image, UnidentifiedImageError
    if not osp.isfile(img_path):
        raise FileNotFoundError(f'image not found: {img_path}')
    try:
        with Image.open(img_path) as img:
            size = img.size
            fmt = img.format
            if decode:
                img.load()
    except UnidentifiedImageError:
        raise VOCCheckError(
            f'{img_path}: not a readable image (PIL cannot identify it)'
        ) from None
    except OSError as e:  # PIL: "image file is truncated", broken data
        raise VOCCheckError(f'{img_path}: unreadable image ({e})') from None
    if fmt == 'JPEG':
        with open(img_path, 'rb') as f:
            f.seek(-2, 2)
            if f.read(2) != b'\xff\xd9':
                raise VOCCheckError(
                    f'{img_path}: truncated JPEG (no end-of-image marker '
                    'FFD9 at the end of the file)')
    return size


def _int_field(node: Optional[ET.Element], field: str, where: str,
               errors: List[str]) -> Optional[float]:
    """The number in ``<field>`` of ``node``, or None with an error."""
    child = None if node is None else node.find(field)
    if child is None or child.text is None or not child.text.strip():
        errors.append(f'{where}: missing <{field}>')
        return None
    try:
        return float(child.text)
    except ValueError:
        errors.append(f'{where}: <{field}> is not a number: '
                      f'{child.text.strip()!r}')
        return None


def check_voc_item(xml_path: str,
                   img_path: str,
                   classes: Sequence[str],
                   check_image: bool = True,
                   decode: bool = False) -> VOCItemReport:
    """Checks one VOC item: its XML, its objects and (optionally) its image.

    Args:
        xml_path (str): The annotation.
        img_path (str): The image the annotation describes.
        classes (Sequence[str]): Class names the dataset knows.
        check_image (bool): Check that the image exists, can be read, is not
            truncated and has the size the XML states. Defaults to True.
        decode (bool): Decode all pixels of the image (see
            :func:`image_size`). Defaults to False.

    Returns:
        VOCItemReport: Errors, warnings, unknown classes and the image
        size. A missing or malformed XML is an error of the report too.
    """
    errors: List[str] = []
    warnings: List[str] = []
    unknown: List[str] = []
    try:
        root = read_voc_xml(xml_path)
    except (FileNotFoundError, VOCCheckError) as e:
        return VOCItemReport([str(e)], [], [], None)
    size = _xml_size(root, xml_path, img_path, errors, warnings)
    if check_image:
        size = _check_image(xml_path, img_path, size, decode, errors)
    for i, obj in enumerate(root.findall('object')):
        _check_object(obj, i, xml_path, classes, size, errors, unknown)
    return VOCItemReport(errors, warnings, unknown, size)


def _xml_size(root: ET.Element, xml_path: str, img_path: str,
              errors: List[str],
              warnings: List[str]) -> Optional[Tuple[int, int]]:
    """``(width, height)`` of ``<size>``; None when it is missing (a
    warning) or not positive integers (an error)."""
    size_node = root.find('size')
    if size_node is None:
        warnings.append(f'{xml_path}: no <size>; the size is read from the '
                        f'image {img_path}')
        return None
    width = _int_field(size_node, 'width', f'{xml_path} <size>', errors)
    height = _int_field(size_node, 'height', f'{xml_path} <size>', errors)
    if width is None or height is None:
        return None
    if width < 1 or height < 1 or width != int(width) or \
            height != int(height):
        errors.append(f'{xml_path}: <size> must hold positive '
                      f'integers, got width={width:g}, '
                      f'height={height:g}')
        return None
    return (int(width), int(height))


def _check_image(xml_path: str, img_path: str,
                 size: Optional[Tuple[int, int]], decode: bool,
                 errors: List[str]) -> Optional[Tuple[int, int]]:
    """Checks that the image can be read and has the XML's size; returns
    the size (the image's when the XML has none)."""
    try:
        actual = image_size(img_path, decode=decode)
    except (FileNotFoundError, VOCCheckError) as e:
        errors.append(f'{xml_path}: {e}')
        return size
    if size is not None and size != actual:
        errors.append(
            f'{xml_path}: <size> says {size[0]}x{size[1]} '
            f'(width x height), the image {img_path} is '
            f'{actual[0]}x{actual[1]}')
    return size or actual


def _check_object(obj: ET.Element, i: int, xml_path: str,
                  classes: Sequence[str], size: Optional[Tuple[int, int]],
                  errors: List[str], unknown: List[str]) -> None:
    """Checks object ``i``: its name, ``<difficult>`` and box."""
    name_node = obj.find('name')
    name = None if name_node is None or name_node.text is None else \
        name_node.text.strip()
    where = f'{xml_path} object {i}' + (f' ({name!r})' if name else '')
    if not name:
        errors.append(f'{where}: missing <name>')
        return
    if name not in classes:
        unknown.append(f'{where}: unknown class {name!r} (the dataset '
                       f'has {len(classes)} classes: '
                       f'{", ".join(classes)})')
        return
    difficult = obj.find('difficult')
    if difficult is not None and (difficult.text or '').strip() not in (
            '0', '1'):
        errors.append(f'{where}: <difficult> must be 0 or 1, got '
                      f'{difficult.text!r}')
    box = obj.find('bndbox')
    if box is None:
        errors.append(f'{where}: missing <bndbox>')
        return
    values = [_int_field(box, c, f'{where} <bndbox>', errors)
              for c in _COORDS]
    if all(v is not None for v in values):
        _check_box(values, where, size, errors)


def _check_box(values: List[float], where: str,
               size: Optional[Tuple[int, int]], errors: List[str]) -> None:
    """A non-empty box inside the image."""
    xmin, ymin, xmax, ymax = values
    for lo, hi, a, b in (('xmin', 'xmax', xmin, xmax),
                         ('ymin', 'ymax', ymin, ymax)):
        if a >= b:
            errors.append(f'{where}: empty box, {lo} ({a:g}) >= {hi} '
                          f'({b:g})')
    if min(xmin, ymin) < 0:
        errors.append(f'{where}: box outside the image, negative '
                      f'coordinate in (xmin, ymin) = ({xmin:g}, {ymin:g})')
    if size is not None and (xmax > size[0] or ymax > size[1]):
        errors.append(
            f'{where}: box outside the image, (xmax, ymax) = '
            f'({xmax:g}, {ymax:g}) but the image is {size[0]}x{size[1]}')
