"""Lets MMEngine resolve ``_base_ = 'mmdet_rankloss::<subdir>/<file>.py'``.

MMEngine 0.10.7 resolves ``package::path`` only for the OpenMMLab packages in
``mmengine.config.utils.MODULE2PACKAGE`` (an assertion for any other name),
then reads ``<package>/.mim/model-index.yml`` and falls back to
``<package>/.mim/configs/<path>``. Both files ship with this package
(``mmdet_rankloss/.mim``). Two patches remain, applied by
:func:`register_config_package`:

* add ``mmdet_rankloss`` to ``MODULE2PACKAGE``;
* answer MMEngine's ``get_installed_path('mmdet_rankloss')`` with the directory
  of the imported package. MMEngine derives it from the distribution's
  location, which for an editable install (``pip install -e .``) is
  site-packages, where no ``mmdet_rankloss`` directory exists.

The patch must run before ``Config.fromfile`` parses a config:
``custom_imports`` are imported only after the ``_base_`` files are merged,
too late for a ``_base_`` that names this package. ``import mmdet_rankloss`` applies it, so
``tools/train.py`` and ``tools/test.py`` of this repository (which import the
package first) accept such configs; MMDetection's own scripts need the import
first (see ``docs/detection.md``).
"""
import os
import os.path as osp
from typing import List, Optional, Tuple

PACKAGE = 'mmdet_rankloss'


def package_root() -> str:
    """Returns the directory of the imported ``mmdet_rankloss`` package."""
    return osp.dirname(osp.dirname(osp.abspath(__file__)))


def config_root() -> str:
    """Returns the directory holding the packaged configs.

    It is ``mmdet_rankloss/.mim/configs``, the place MMEngine looks up for
    ``mmdet_rankloss::...``. In a checkout it links to the repository's
    ``configs/``; in a built wheel it holds copies of them.
    """
    return osp.join(package_root(), '.mim', 'configs')


def config_files(root: Optional[str] = None,
                 exts: Tuple[str, ...] = ('.py', '.yml'),
                 skip_bases: bool = False) -> List[str]:
    """Lists config files, as sorted ``/``-separated paths relative to root.

    Args:
        root (str, optional): Directory to walk (links followed). Defaults
            to :func:`config_root`, the configs this package ships.
        exts (tuple[str]): File name endings to keep.
        skip_bases (bool): Leave out ``_base_`` directories, whose files are
            bases of the model configs rather than models.
    """
    root = config_root() if root is None else root
    skip = {'__pycache__', '_base_'} if skip_bases else {'__pycache__'}
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d not in skip)
        found += [
            osp.relpath(osp.join(dirpath, name), root).replace(os.sep, '/')
            for name in filenames if name.endswith(exts)
        ]
    return sorted(found)


def register_config_package() -> None:
    """Makes ``_base_ = 'mmdet_rankloss::...'`` resolvable; idempotent."""
    from mmengine.config import config as config_module
    from mmengine.config import utils as config_utils

    config_utils.MODULE2PACKAGE.setdefault(PACKAGE, PACKAGE)
    original = config_module.get_installed_path
    if getattr(original, '_mmdet_rankloss_patch', False):
        return

    def get_installed_path(package: str) -> str:
        if package == PACKAGE:
            return package_root()
        return original(package)

    get_installed_path._mmdet_rankloss_patch = True
    config_module.get_installed_path = get_installed_path
