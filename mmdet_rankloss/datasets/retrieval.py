"""Image retrieval datasets read from their official on-disk formats.

Data infos hold ``img_path`` (or ``img``), an integer ``gt_label`` and, where
the dataset has them, ``super_label`` (for the sampler) and ``is_query``
(In-Shop). Splits are zero-shot by class (Song et al. 2016; Liu et al. 2016).
Official counts are checked on full copies (``check_counts``); a missing
annotation file is named with the layout."""
import os.path as osp
from typing import Dict, List, Optional, Sequence

import numpy as np
from mmengine.dataset import BaseDataset

from mmdet.registry import DATASETS

__all__ = [
    'RetrievalDataset', 'CUB200Dataset', 'SOPDataset', 'InShopDataset'
]


class RetrievalDataset(BaseDataset):
    """Base class: a split, labels for samplers, count checks.

    Args:
        split (str): Which split to load; one of the class's ``SPLITS``.
        check_counts (bool, optional): Check the official image counts of
            the split. None (auto): check when the annotation file lists at
            least as many images as the official release (a miniature copy
            lists fewer). Defaults to None.
        **kwargs: Passed to :class:`mmengine.dataset.BaseDataset`
            (``data_root``, ``ann_file``, ``data_prefix``, ``pipeline``,
            ...).
    """
    SPLITS: Sequence[str] = ()
    LAYOUT: str = ''

    def __init__(self,
                 split: str,
                 check_counts: Optional[bool] = None,
                 **kwargs) -> None:
        if split not in self.SPLITS:
            raise ValueError(f'{type(self).__name__}: split must be one of '
                             f'{tuple(self.SPLITS)}, got {split!r}')
        if check_counts not in (None, True, False):
            raise ValueError(
                f'check_counts must be None, True or False, got '
                f'{check_counts!r}')
        self.split = split
        self.check_counts = check_counts
        self._labels: Optional[np.ndarray] = None
        self._super_labels: Optional[np.ndarray] = None
        super().__init__(**kwargs)

    # ------------------------------------------------------------ helpers
    def _read_lines(self, path: str) -> List[str]:
        """Non-empty lines of an annotation file, or a clear error."""
        if not osp.isfile(path):
            raise FileNotFoundError(
                f'{type(self).__name__}: annotation file not found: {path} '
                f'(data_root={self.data_root!r}). Expected layout: '
                f'{self.LAYOUT}')
        with open(path, encoding='utf-8') as f:
            return [line.strip() for line in f if line.strip()]

    def _rows(self, path: str, columns: Sequence[str],
              skip: int = 0) -> List[List[str]]:
        """The whitespace-separated rows of an annotation file, each with
        at least ``len(columns)`` fields, or an error naming the line."""
        rows = []
        for number, line in enumerate(self._read_lines(path)[skip:],
                                      skip + 1):
            fields = line.split()
            if len(fields) < len(columns):
                raise ValueError(
                    f'{type(self).__name__}: {path} line {number} has '
                    f'{len(fields)} columns, expected {len(columns)} '
                    f'({" ".join(columns)}): {line!r}')
            rows.append(fields)
        return rows

    def _label(self, path: str, row: List[str], column: str, value: str,
               low: int, high: Optional[int] = None) -> int:
        """An integer label in ``[low, high]``, or an error naming it."""
        try:
            label = int(value)
        except ValueError:
            label = None
        if label is None or label < low or (high is not None
                                            and label > high):
            bound = f'{low}..{high}' if high is not None else f'>= {low}'
            raise ValueError(
                f'{type(self).__name__}: {path}: {column} must be an '
                f'integer in {bound}, got {value!r} in row '
                f'{" ".join(row)!r}')
        return label

    def _check_count(self, name: str, actual: int, expected: int,
                     listed: int, official: int) -> None:
        """Raise if a split's size differs from the official one.

        Args:
            name (str): What is counted, for the message.
            actual (int): Number found.
            expected (int): Official number.
            listed (int): Images listed by the annotation file(s).
            official (int): Images the official annotation file(s) list.
        """
        check = self.check_counts
        if check is None:
            check = listed >= official
        if check and actual != expected:
            raise ValueError(
                f'{type(self).__name__}: {name} has {actual} images, the '
                f'official release has {expected} (annotation lists '
                f'{listed} images, official {official}); the dataset under '
                f'{self.data_root!r} is incomplete or not the official one')

    def _img_path(self, relative: str) -> str:
        return osp.join(self.data_prefix.get('img_path', ''), relative)

    # ------------------------------------------------------- for samplers
    def get_labels(self) -> np.ndarray:
        """Class label of every sample, without loading images.

        Returns:
            np.ndarray: int64 array of shape (len(self),).
        """
        if self._labels is None:
            self._labels = np.array(
                [int(self.get_data_info(i)['gt_label'])
                 for i in range(len(self))],
                dtype=np.int64)
        return self._labels

    def get_super_labels(self) -> Optional[np.ndarray]:
        """Super-class label of every sample, or None if there is none.

        Returns:
            np.ndarray | None: int64 array of shape (len(self),).
        """
        if self._super_labels is None and len(self) and \
                self.get_data_info(0).get('super_label') is not None:
            self._super_labels = np.array(
                [int(self.get_data_info(i)['super_label'])
                 for i in range(len(self))],
                dtype=np.int64)
        return self._super_labels

    def get_cat_ids(self, idx: int) -> List[int]:
        """Class of sample ``idx`` (for MMDetection's class-aware tools)."""
        return [int(self.get_data_info(idx)['gt_label'])]

    # ------------------------------------------ batch-aware augmentation
    def prepare_data(self, idx: int, class_view: Optional[int] = None):
        """The pipeline's output for sample ``idx``.

        Args:
            idx (int): Index of the sample.
            class_view (int, optional): Set as ``class_view`` in the data
                info (see :meth:`__getitems__`). Defaults to None (not set).

        Returns:
            Any: Depends on the pipeline; None drops the sample.
        """
        data_info = self.get_data_info(idx)
        if class_view is not None:
            data_info['class_view'] = class_view
        return self.pipeline(data_info)

    def __getitems__(self, indices: Sequence[int]) -> list:
        """The samples of a whole batch (the ``DataLoader`` calls this with a
        batch sampler's batch), each data info with ``class_view``: how many
        images of its class come before it in the batch, for
        :class:`~mmdet_rankloss.datasets.AugmentLaterViews`. A sample the
        pipeline drops is replaced as in ``BaseDataset.__getitem__``, keeping
        its ``class_view``.

        Args:
            indices (Sequence[int]): Indices of the batch.

        Returns:
            list: The pipeline's outputs, in the order of ``indices``.
        """
        if not self._fully_initialized:
            self.full_init()
        labels = self.get_labels()
        seen: Dict[int, int] = {}
        batch = []
        for idx in indices:
            label = int(labels[idx])
            view = seen.get(label, 0)
            seen[label] = view + 1
            data = self.prepare_data(idx, class_view=view)
            for _ in range(0 if self.test_mode else self.max_refetch):
                if data is not None:
                    break
                data = self.prepare_data(self._rand_another(), view)
            if data is None:
                raise RuntimeError(
                    f'{type(self).__name__}: the pipeline returned None for '
                    f'sample {idx}' + ('' if self.test_mode else
                                       f' and {self.max_refetch} random '
                                       'replacements'))
            batch.append(data)
        return batch


@DATASETS.register_module()
class CUB200Dataset(RetrievalDataset):
    """CUB-200-2011 (Wah et al. 2011), zero-shot retrieval split.

    Split by class (not the classification split): ``'train'`` = classes
    1-100 (5,864 images), ``'test'`` = classes 101-200 (5,924 images).
    ``gt_label`` is the official class id (1-200). Layout (the official
    ``CUB_200_2011.tgz`` unpacked): docs/retrieval.md.

    Args:
        split (str): ``'train'`` or ``'test'``. Defaults to ``'train'``.
        ann_file (str): Image list. Defaults to ``'images.txt'``.
        label_file (str): Class labels, relative to ``data_root``.
            Defaults to ``'image_class_labels.txt'``.
        data_prefix (dict): ``img_path`` folder. Defaults to
            ``dict(img_path='images')``.
        num_train_classes (int): Classes ``1..num_train_classes`` are the
            training split. Defaults to 100.
        **kwargs: See :class:`RetrievalDataset`.
    """
    SPLITS = ('train', 'test')
    LAYOUT = ('data_root/images.txt, data_root/image_class_labels.txt, '
              'data_root/images/<class>/<image>.jpg (CUB_200_2011.tgz)')
    OFFICIAL = dict(total=11788, train=5864, test=5924)
    NUM_CLASSES = 200

    def __init__(self,
                 split: str = 'train',
                 ann_file: str = 'images.txt',
                 label_file: str = 'image_class_labels.txt',
                 data_prefix: Optional[Dict[str, str]] = None,
                 num_train_classes: int = 100,
                 **kwargs) -> None:
        self.label_file = label_file
        self.num_train_classes = num_train_classes
        super().__init__(
            split=split,
            ann_file=ann_file,
            data_prefix=data_prefix or dict(img_path='images'),
            **kwargs)

    def load_data_list(self) -> List[dict]:
        """Parse ``images.txt`` and ``image_class_labels.txt``."""
        images = {
            row[0]: ' '.join(row[1:])
            for row in self._rows(self.ann_file, ('image_id', 'path'))
        }
        label_path = self.label_file
        if self.data_root and not osp.isabs(label_path):
            label_path = osp.join(self.data_root, label_path)
        labels = {
            row[0]: self._label(label_path, row, 'class_id', row[1], 1,
                                self.NUM_CLASSES)
            for row in self._rows(label_path, ('image_id', 'class_id'))
        }
        missing = sorted(set(images) - set(labels))
        if missing:
            raise ValueError(
                f'CUB200Dataset: {len(missing)} image ids of {self.ann_file} '
                f'have no class in {label_path} (first: {missing[0]})')
        data_list = []
        for image_id in sorted(images, key=lambda i: (len(i), i)):
            label = int(labels[image_id])
            is_train = label <= self.num_train_classes
            if is_train == (self.split == 'train'):
                data_list.append(
                    dict(
                        img_path=self._img_path(images[image_id]),
                        gt_label=label))
        self._check_count(f'split {self.split!r}', len(data_list),
                          self.OFFICIAL[self.split], len(images),
                          self.OFFICIAL['total'])
        return data_list


@DATASETS.register_module()
class SOPDataset(RetrievalDataset):
    """Stanford Online Products (Song et al. 2016).

    ``'train'``: ``Ebay_train.txt``, 59,551 images of 11,318 classes;
    ``'test'``: ``Ebay_test.txt``, 60,502 images of 11,316 classes. Every
    sample has the product ``gt_label`` (``class_id``) and the
    ``super_label`` (``super_class_id``, 12 super-classes such as bicycle
    or cup), which the super-class-pair batch sampler uses. Layout (the
    official ``Stanford_Online_Products.zip`` unpacked): docs/retrieval.md.

    Args:
        split (str): ``'train'`` or ``'test'``. Defaults to ``'train'``.
        ann_file (str, optional): Defaults to None: ``Ebay_<split>.txt``.
        **kwargs: See :class:`RetrievalDataset`.
    """
    SPLITS = ('train', 'test')
    LAYOUT = ('data_root/Ebay_train.txt, data_root/Ebay_test.txt, '
              'data_root/<super_class>_final/<image>.JPG '
              '(Stanford_Online_Products.zip)')
    OFFICIAL = dict(train=59551, test=60502)
    OFFICIAL_CLASSES = dict(train=11318, test=11316)
    NUM_SUPER_CLASSES = 12

    def __init__(self,
                 split: str = 'train',
                 ann_file: Optional[str] = None,
                 **kwargs) -> None:
        if ann_file is None and split in self.SPLITS:
            ann_file = f'Ebay_{split}.txt'
        super().__init__(split=split, ann_file=ann_file or '', **kwargs)

    def load_data_list(self) -> List[dict]:
        """Parse ``Ebay_<split>.txt`` (header line first)."""
        lines = self._read_lines(self.ann_file)
        header = lines[0].split() if lines else []
        if header[:4] != ['image_id', 'class_id', 'super_class_id', 'path']:
            raise ValueError(
                f'SOPDataset: {self.ann_file} does not start with the header '
                f'"image_id class_id super_class_id path", got {lines[:1]}')
        data_list = []
        columns = ('image_id', 'class_id', 'super_class_id', 'path')
        for row in self._rows(self.ann_file, columns, skip=1):
            _, class_id, super_id, path = row[:4]
            data_list.append(
                dict(
                    img_path=self._img_path(path),
                    gt_label=self._label(self.ann_file, row, 'class_id',
                                         class_id, 1),
                    super_label=self._label(self.ann_file, row,
                                            'super_class_id', super_id, 1,
                                            self.NUM_SUPER_CLASSES)))
        official = self.OFFICIAL[self.split]
        self._check_count(f'split {self.split!r}', len(data_list), official,
                          len(data_list), official)
        num_classes = len({d['gt_label'] for d in data_list})
        if (self.check_counts or (self.check_counts is None
                                  and len(data_list) >= official)) and \
                num_classes != self.OFFICIAL_CLASSES[self.split]:
            raise ValueError(
                f'SOPDataset: split {self.split!r} has {num_classes} classes, '
                f'the official release {self.OFFICIAL_CLASSES[self.split]}')
        return data_list


@DATASETS.register_module()
class InShopDataset(RetrievalDataset):
    """In-Shop Clothes Retrieval (DeepFashion, Liu et al. 2016).

    Splits of ``list_eval_partition.txt``: ``'train'`` (25,882 images),
    ``'query'`` (14,218), ``'gallery'`` (12,612) and ``'test'`` = query +
    gallery, where every sample carries ``is_query`` so that
    :class:`~mmdet_rankloss.evaluation.RetrievalMetric` retrieves gallery
    items for each query. ``gt_label`` is the item number (``id_00000001``
    -> 1); ``super_label`` is the clothing category (``WOMEN/Dresses``; 23
    of them), numbered in sorted order over the whole file. Layout
    (``Eval/list_eval_partition.txt`` and the unpacked ``Img/img.zip`` of the
    official release): docs/retrieval.md; the list's line 1 is the number of
    images, line 2 the header ``image_name item_id evaluation_status``.

    Args:
        split (str): ``'train'``, ``'query'``, ``'gallery'`` or ``'test'``.
            Defaults to ``'train'``.
        ann_file (str): Defaults to ``'list_eval_partition.txt'``.
        **kwargs: See :class:`RetrievalDataset`.
    """
    SPLITS = ('train', 'query', 'gallery', 'test')
    LAYOUT = ('data_root/list_eval_partition.txt (from Eval/), '
              'data_root/img/<MEN|WOMEN>/<category>/<item>/<image>.jpg '
              '(Img/img.zip unpacked)')
    OFFICIAL = dict(total=52712, train=25882, query=14218, gallery=12612)

    def __init__(self,
                 split: str = 'train',
                 ann_file: str = 'list_eval_partition.txt',
                 **kwargs) -> None:
        super().__init__(split=split, ann_file=ann_file, **kwargs)

    def load_data_list(self) -> List[dict]:
        """Parse ``list_eval_partition.txt``."""
        lines = self._read_lines(self.ann_file)
        if len(lines) < 2 or not lines[0].isdigit() or \
                lines[1].split()[:3] != ['image_name', 'item_id',
                                         'evaluation_status']:
            raise ValueError(
                f'InShopDataset: {self.ann_file} must start with the number '
                'of images and the header "image_name item_id '
                f'evaluation_status", got {lines[:2]}')
        rows = [
            row[:3] for row in self._rows(
                self.ann_file, ('image_name', 'item_id', 'evaluation_status'),
                skip=2)
        ]
        categories = sorted({self._category(path) for path, _, _ in rows})
        category_ids = {name: i for i, name in enumerate(categories)}
        wanted = ('query', 'gallery') if self.split == 'test' else (
            self.split, )
        data_list = []
        counts = dict(train=0, query=0, gallery=0)
        for path, item_id, status in rows:
            if status not in counts:
                raise ValueError(f'InShopDataset: unknown evaluation_status '
                                 f'{status!r} in {self.ann_file}')
            counts[status] += 1
            if status not in wanted:
                continue
            if not (item_id.startswith('id_')
                    and item_id[3:].isdigit()):
                raise ValueError(
                    f'InShopDataset: {self.ann_file}: item_id must look like '
                    f"'id_00000001', got {item_id!r} for {path}")
            info = dict(
                img_path=self._img_path(path),
                gt_label=int(item_id[3:]),
                super_label=category_ids[self._category(path)])
            if self.split == 'test':
                info['is_query'] = status == 'query'
            data_list.append(info)
        declared = int(lines[0])
        for split in wanted if self.split == 'test' else (self.split, ):
            self._check_count(f'split {split!r}', counts[split],
                              self.OFFICIAL[split], declared,
                              self.OFFICIAL['total'])
        return data_list

    @staticmethod
    def _category(path: str) -> str:
        parts = path.replace('\\', '/').split('/')
        # img/<gender>/<category>/<item>/<file>
        return '/'.join(parts[1:3]) if len(parts) >= 5 else '/'.join(
            parts[:-2])
