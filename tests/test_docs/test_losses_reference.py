"""docs/losses.md is the reference of every loss: its first table names every
module the package registers in ``mmdet_rankloss/losses/`` (losses, AP
back-ends, the aLRP hook) and every head made for a rank loss, each with its
configs; the config globs it gives match shipped configs."""
import glob
import os.path as osp
import re

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
PAGE = osp.join(ROOT, 'docs', 'losses.md')


def first_table():
    """The rows (lists of cells) of the page's first table."""
    with open(PAGE, encoding='utf-8') as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('|'))
    rows = []
    for line in lines[start:]:
        if not line.startswith('|'):
            break
        rows.append([c.strip() for c in line.strip().strip('|').split('|')])
    assert rows[0] == ['loss', 'registry names: loss, back-ends, heads, hook',
                       'configs']
    return rows[2:]


def registered():
    """Names of the classes of mmdet_rankloss/losses and of the rank-loss
    heads in MMDetection's registries."""
    from mmdet.registry import HOOKS, MODELS

    import mmdet_rankloss  # noqa: F401
    names = set()
    for registry in (MODELS, HOOKS):
        for name, cls in registry.module_dict.items():
            module = getattr(cls, '__module__', '')
            if module.startswith('mmdet_rankloss.losses') or module in (
                    'mmdet_rankloss.models.dense_heads',
                    'mmdet_rankloss.models.rank_sort_heads'):
                names.add(name)
    return names


def test_every_registered_loss_is_in_the_table():
    rows = first_table()
    listed = {n for row in rows for n in re.findall(r'`(\w+)`', row[1])}
    missing = registered() - listed
    assert not missing, f'docs/losses.md does not list {sorted(missing)}'
    assert len(registered()) >= 20


def test_each_row_has_configs_that_exist():
    # the paper and task of each loss: README.md's losses table
    # (test_readme.py)
    for loss, _, configs in first_table():
        for pattern in re.findall(r'`([^`]+)`', configs):
            found = glob.glob(osp.join(ROOT, 'configs', pattern))
            assert found, f'{loss}: no config matches configs/{pattern}'
