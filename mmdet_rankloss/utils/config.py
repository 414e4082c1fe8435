"""Where the packaged configs are: ``mmdet_rankloss/.mim``.

MMEngine 0.10.7 resolves ``_base_ = 'mmdet_rankloss::<subdir>/<file>.py'``
by reading ``<package>/.mim/model-index.yml`` and falling back to
``<package>/.mim/configs/<path>``. Both ship with this package (in a
checkout, links to ``model-index.yml`` and ``configs/``). MMEngine accepts
the name ``mmdet_rankloss`` only once it is registered in its
``MODULE2PACKAGE`` table: the patch ``config_scope`` of
:mod:`mmdet_rankloss.patches`, applied by ``import mmdet_rankloss``. It must
be in place before ``Config.fromfile`` parses a config: ``custom_imports``
are imported only after the ``_base_`` files are merged, too late for a
``_base_`` that names this package (MMDetection's own scripts need the
import first, see ``docs/get_started.md``).
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
