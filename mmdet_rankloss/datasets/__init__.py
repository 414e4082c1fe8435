"""Retrieval datasets (CUB-200-2011, SOP, In-Shop, digits), packing and the
AUC recipe's augmentations."""
from .augmentations import AugmentLaterViews, RandomMotionBlur, RandomZoom
from .digits import DigitsDataset
from .retrieval import (CUB200Dataset, InShopDataset, RetrievalDataset,
                        SOPDataset)
from .transforms import PackRetrievalInputs

__all__ = [
    'RetrievalDataset', 'CUB200Dataset', 'SOPDataset', 'InShopDataset',
    'DigitsDataset', 'PackRetrievalInputs', 'RandomZoom', 'RandomMotionBlur',
    'AugmentLaterViews'
]
