"""MMDetection's CocoDataset with its annotation file checked while it loads.

The COCO-format twin of :class:`~mmdet_rankloss.datasets.CheckedVOCDataset`:
a user's own COCO-format data should not lose boxes outside the image or of
a misspelled class silently, nor stop on day three at a missing image.
:class:`CheckedCocoDataset` is a drop-in for ``type='CocoDataset'`` in a
config: it reads the same file into the same data infos, after checking it
with :func:`~mmdet_rankloss.utils.coco_check.check_coco_file`, and raises
if there is any fault, naming the file, the entry and the value.
"""
import logging
from typing import List

from mmengine.fileio import get_local_path
from mmengine.logging import print_log

from mmdet.datasets import CocoDataset
from mmdet.registry import DATASETS
from ..utils.coco_check import CocoCheckError, check_coco_file, read_coco_json
from .checked import CheckedOptions

__all__ = ['CheckedCocoDataset']

#: Faults quoted in the error message (all are counted).
MAX_QUOTED = 10


@DATASETS.register_module()
class CheckedCocoDataset(CheckedOptions, CocoDataset):
    """:class:`mmdet.datasets.CocoDataset` that checks its annotation file
    (:func:`~mmdet_rankloss.utils.coco_check.check_coco_file`: the lists,
    unique ids, classes in the file's order, every image and annotation, and
    with ``check_images`` each image's header and size), with the file, the
    entry and the value in the message. The file is read twice and each image
    header once at start-up.

    Args:
        unknown_class (str): An annotation whose category is in the file but
            not one of the dataset's classes: ``'error'`` (raise, the default)
            or ``'skip'`` (drop it, as MMDetection does, with one warning). An
            unlisted category id is always an error.
        check_images (bool): Check the images; only for local files
            (``backend_args`` None). Defaults to True.
        **kwargs: Passed to :class:`mmdet.datasets.CocoDataset`.

    Raises:
        CocoCheckError: If the file has any fault (the first :data:`MAX_QUOTED`
            quoted, all counted), or is not valid JSON.
        FileNotFoundError: A missing annotation file (named).
    """

    def load_data_list(self) -> List[dict]:
        """Checks the annotation file, then loads it as MMDetection does."""
        with get_local_path(self.ann_file,
                            backend_args=self.backend_args) as local_path:
            # a missing file (FileNotFoundError) or malformed JSON stops here
            data = read_coco_json(local_path)
            report = check_coco_file(
                local_path,
                self.data_prefix.get('img', ''),
                self._metainfo['classes'],
                check_images=self.check_images and not self.backend_args,
                data=data)
            del data
        errors = list(report.errors)
        warnings = list(report.warnings)
        if report.unknown:
            if self.unknown_class == 'error':
                errors += [
                    msg + "; set unknown_class='skip' to drop such "
                    'annotations' for msg in report.unknown
                ]
            else:
                warnings.append(
                    f'{self.ann_file}: {len(report.unknown)} annotations of '
                    'categories that are not classes of the dataset skipped,'
                    f' e.g. {report.unknown[0]}')
        if errors:
            quoted = '\n  '.join(errors[:MAX_QUOTED])
            more = f'\n  ... and {len(errors) - MAX_QUOTED} more' if len(
                errors) > MAX_QUOTED else ''
            raise CocoCheckError(
                f'{type(self).__name__}: {len(errors)} '
                f'fault{"s" if len(errors) > 1 else ""} in '
                f'{self.ann_file}:\n  {quoted}{more}')
        for msg in warnings:
            print_log(msg, logger='current', level=logging.WARNING)
        return super().load_data_list()
