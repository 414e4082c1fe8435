"""The synthetic benchmarks: writers of the quickstart's toy VOC, DigitsVOC
(with masks and its COCO twin), the toy set in the COCO format, printed
glyphs, and the registered digit retrieval sets and digit scenes.

Configs that use ``DigitInstancesDataset`` or ``RandomDigitScene`` import
this module through ``custom_imports``.
"""
from .digit_scene import RandomDigitScene, render_digit_scene
from .digits import DigitInstancesDataset
from .digits_voc import DIGIT_CLASSES, make_digits_voc
from .toy_coco import TOY_CATEGORY_IDS, make_toy_coco
from .toy_voc import TOY_CLASSES, make_toy_voc

__all__ = ['DigitInstancesDataset', 'RandomDigitScene', 'render_digit_scene',
           'TOY_CLASSES', 'make_toy_voc', 'DIGIT_CLASSES', 'make_digits_voc',
           'TOY_CATEGORY_IDS', 'make_toy_coco']
