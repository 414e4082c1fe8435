"""Where the lab finds the repository it belongs to (configs, docs, tools):
the checkout that holds this package (an editable install, as
``tools/install.sh`` makes it)."""
import os.path as osp

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
