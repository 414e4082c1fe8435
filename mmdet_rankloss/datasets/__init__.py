"""Retrieval datasets (CUB-200-2011, SOP, In-Shop, digits by class or by
instance), packing, the AUC recipe's augmentations, digits on random scenes,
and a VOC dataset that checks its files."""
from .augmentations import AugmentLaterViews, RandomMotionBlur, RandomZoom
from .digit_scene import RandomDigitScene, render_digit_scene
from .digits import DigitInstancesDataset, DigitsDataset
from .retrieval import (CUB200Dataset, InShopDataset, RetrievalDataset,
                        SOPDataset)
from .transforms import PackRetrievalInputs
from .voc import CheckedVOCDataset

__all__ = [
    'RetrievalDataset', 'CUB200Dataset', 'SOPDataset', 'InShopDataset',
    'DigitsDataset', 'DigitInstancesDataset', 'PackRetrievalInputs', 'RandomZoom', 'RandomMotionBlur',
    'AugmentLaterViews', 'CheckedVOCDataset', 'RandomDigitScene',
    'render_digit_scene'
]
