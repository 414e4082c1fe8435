"""Runs MMDetection's own command-line tools (``mmdet/.mim/tools``) after
``import mmdet_rankloss``, with CPU-only distributed training
(:mod:`~rankloss_lab.cpu_distributed`).
"""
import os.path as osp
import runpy
import sys
from typing import Optional, Sequence


def mmdet_tool_path(name: str) -> str:
    """The path of one of MMDetection's tools, e.g. ``'train.py'``
    (FileNotFoundError where the installed mmdet has no ``.mim`` data)."""
    import mmdet
    path = osp.join(osp.dirname(mmdet.__file__), '.mim', 'tools', name)
    if not osp.isfile(path):
        raise FileNotFoundError(
            f'MMDetection tool {name!r} not found at {path}; install mmdet '
            'from its wheel (`pip install mmdet==3.3.0`), which ships it')
    return path


def run_mmdet_tool(name: str, argv: Optional[Sequence[str]] = None) -> None:
    """Runs MMDetection's tool ``name`` as ``__main__`` with ``argv``."""
    import mmdet_rankloss  # noqa: F401  (registers modules, applies patches)
    from .cpu_distributed import close_process_group, cpu_distributed_args
    path = mmdet_tool_path(name)
    args = sys.argv[1:] if argv is None else list(argv)
    sys.argv = [path] + cpu_distributed_args(args)
    runpy.run_path(path, run_name='__main__')
    close_process_group()
