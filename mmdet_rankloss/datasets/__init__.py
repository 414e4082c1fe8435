"""Datasets for training with rank losses on your own data: retrieval
datasets (CUB-200-2011, SOP, In-Shop) and their packing, the AUC recipe's
augmentations, and VOC and COCO datasets that check their files."""
from .augmentations import AugmentLaterViews, RandomMotionBlur, RandomZoom
from .coco import CheckedCocoDataset
from .retrieval import (CUB200Dataset, InShopDataset, RetrievalDataset,
                        SOPDataset)
from .transforms import PackRetrievalInputs
from .voc import CheckedVOCDataset

__all__ = [
    'RetrievalDataset', 'CUB200Dataset', 'SOPDataset', 'InShopDataset',
    'PackRetrievalInputs', 'RandomZoom', 'RandomMotionBlur',
    'AugmentLaterViews', 'CheckedVOCDataset', 'CheckedCocoDataset'
]
