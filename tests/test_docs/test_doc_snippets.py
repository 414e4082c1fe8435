"""Every whole config a page shows (a Python block with ``custom_imports``
and a ``_base_``) loads through MMEngine and builds its model: a user who
copies it gets a detector, not an error."""
import glob
import os.path as osp
import re

import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
BLOCK = re.compile(r'```python\n(.*?)```', re.S)


def whole_configs():
    out = []
    pages = ['README.md'] + sorted(
        osp.relpath(p, ROOT) for p in glob.glob(osp.join(ROOT, 'docs', '*.md')))
    for rel in pages:
        with open(osp.join(ROOT, rel), encoding='utf-8') as f:
            text = f.read()
        for m in BLOCK.finditer(text):
            code = m.group(1)
            if '_base_' in code and 'custom_imports' in code:
                line = text[:m.start()].count('\n') + 1
                out.append(pytest.param(code, id=f'{rel}:{line}'))
    return out


def test_the_pages_show_a_whole_config():
    assert whole_configs(), 'no whole config found: is the pattern stale?'


@pytest.mark.parametrize('code', whole_configs())
def test_a_shown_config_builds(code, tmp_path):
    from mmengine.config import Config
    from mmdet.registry import MODELS
    from mmdet.utils import register_all_modules
    register_all_modules()
    path = tmp_path / 'shown.py'
    path.write_text(code)
    cfg = Config.fromfile(str(path))
    model = MODELS.build(cfg.model)
    # the recommended dense recipe: the stock head's threshold is kept, since
    # the focal term keeps the sigmoid scores meaningful
    head = getattr(model, 'bbox_head', None)
    if head is not None and type(head.loss_cls).__name__ == 'MixedRankLoss':
        assert cfg.model.test_cfg.score_thr > 0
