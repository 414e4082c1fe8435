"""Importing this module applies every patch of :mod:`mmdet_rankloss.patches`.

It is the opt-in for MMDetection's own scripts, which import a package only
through a config::

    custom_imports = dict(
        imports=['mmdet_rankloss', 'mmdet_rankloss.apply_patches'],
        allow_failed_imports=False)

The project's ``tools/train.py`` and ``tools/test.py`` apply the same
patches themselves.
"""
from .patches import enable_all

enable_all()
