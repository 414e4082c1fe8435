"""MMDetection's VOCDataset with every annotation checked while it loads.

A week-long VOC training should not stop on day three at an unreadable
image, nor train on a box with ``xmin >= xmax`` or silently lose the objects
of a misspelled class. :class:`CheckedVOCDataset` is a drop-in for
``type='VOCDataset'`` in a config: it reads the same files into the same
data infos, after checking each item with
:func:`~mmdet_rankloss.utils.voc_check.check_voc_item`, and raises on the
first item with a fault, naming the file, the field and the value.
"""
import logging
import os.path as osp
from typing import List, Union

from mmengine.fileio import list_from_file
from mmengine.logging import print_log

from mmdet.datasets import VOCDataset
from mmdet.registry import DATASETS
from ..utils.voc_check import VOCCheckError, check_voc_item
from .checked import CheckedOptions

__all__ = ['CheckedVOCDataset']


@DATASETS.register_module()
class CheckedVOCDataset(CheckedOptions, VOCDataset):
    """:class:`mmdet.datasets.VOCDataset` that checks every item it loads
    (:func:`~mmdet_rankloss.utils.voc_check.check_voc_item`: the XML, its size
    and objects, and with ``check_images`` the image's header and size), with
    the file, field and value in the message; each XML is read twice and each
    image header once at start-up (docs/reliability.md). An XML without
    ``<size>`` loads as in MMDetection, with a warning.

    Args:
        unknown_class (str): An object whose ``<name>`` is not a class of the
            dataset: ``'error'`` (raise, the default) or ``'skip'`` (drop it,
            as MMDetection does, with a warning).
        check_images (bool): Check the images. Defaults to True.
        **kwargs: Passed to :class:`mmdet.datasets.VOCDataset`.

    Raises:
        VOCCheckError: At the first item with a fault (all its faults in the
            message; ``tools/misc/check_dataset.py`` lists every item's).
        FileNotFoundError: A missing XML or image (named).
    """

    def load_data_list(self) -> List[dict]:
        """The items of ``ann_file``; an empty list or a blank line in it is
        an error."""
        ids = list_from_file(self.ann_file, backend_args=self.backend_args)
        if not any(i.strip() for i in ids):
            raise VOCCheckError(
                f'{type(self).__name__}: the image list {self.ann_file} is '
                'empty (no image ids); check ann_file and data_root')
        blank = [n for n, i in enumerate(ids, 1) if not i.strip()]
        if blank:
            raise VOCCheckError(
                f'{type(self).__name__}: the image list {self.ann_file} has '
                f'blank lines (line {blank[0]}); MMDetection would read them '
                "as the image id ''")
        return super().load_data_list()

    def parse_data_info(self, img_info: dict) -> Union[dict, List[dict]]:
        """Checks the item, then parses it as MMDetection does."""
        if not osp.isfile(img_info['xml_path']):
            raise FileNotFoundError(
                f"VOC annotation not found: {img_info['xml_path']} (listed "
                f'as {img_info["img_id"]!r} in {self.ann_file})')
        img_path = osp.join(self.sub_data_root, img_info['file_name'])
        report = check_voc_item(
            img_info['xml_path'],
            img_path,
            self._metainfo['classes'],
            check_image=self.check_images)
        errors = list(report.errors)
        warnings = list(report.warnings)
        if self.unknown_class == 'error':
            errors += [
                msg + "; set unknown_class='skip' to drop such objects"
                for msg in report.unknown
            ]
        else:
            warnings += [msg + ' skipped' for msg in report.unknown]
        if errors:
            raise VOCCheckError('; '.join(errors))
        for msg in warnings:
            print_log(msg, logger='current', level=logging.WARNING)
        return super().parse_data_info(img_info)
