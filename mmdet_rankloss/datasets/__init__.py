"""Retrieval datasets (CUB-200-2011, SOP, In-Shop, digits by class or by
instance), packing, the AUC recipe's augmentations, digits on random scenes,
VOC and COCO datasets that check their files, and the writers of the
synthetic detection sets (the quickstart's toy VOC, DigitsVOC, the toy set
in the COCO format)."""
from .augmentations import AugmentLaterViews, RandomMotionBlur, RandomZoom
from .coco import CheckedCocoDataset
from .digit_scene import RandomDigitScene, render_digit_scene
from .digits import DigitInstancesDataset, DigitsDataset
from .digits_voc import DIGIT_CLASSES, make_digits_voc
from .retrieval import (CUB200Dataset, InShopDataset, RetrievalDataset,
                        SOPDataset)
from .toy_coco import TOY_CATEGORY_IDS, make_toy_coco
from .toy_voc import TOY_CLASSES, make_toy_voc
from .transforms import PackRetrievalInputs
from .voc import CheckedVOCDataset

__all__ = [
    'RetrievalDataset', 'CUB200Dataset', 'SOPDataset', 'InShopDataset',
    'DigitsDataset', 'DigitInstancesDataset', 'PackRetrievalInputs', 'RandomZoom', 'RandomMotionBlur',
    'AugmentLaterViews', 'CheckedVOCDataset', 'RandomDigitScene',
    'render_digit_scene', 'TOY_CLASSES', 'make_toy_voc', 'DIGIT_CLASSES',
    'make_digits_voc', 'CheckedCocoDataset', 'TOY_CATEGORY_IDS',
    'make_toy_coco'
]
