"""Every whole config a page shows (a Python block with ``custom_imports``
and a ``_base_``) loads through MMEngine and builds its model: a user who
copies it gets a detector, not an error."""
import glob
import os.path as osp
import re

import pytest
from helpers import read_config  # tests/ on sys.path

from mmdet_rankloss.utils.config import config_files

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
BLOCK = re.compile(r'```python\n(.*?)```', re.S)


def whole_configs():
    out = []
    pages = ['README.md'] + sorted(osp.relpath(p, ROOT) for p in glob.glob(
        osp.join(ROOT, 'docs', '*.md')))
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


# --- the documented commands ------------------------------------------------
# Every command of a shell block that runs tools/train.py, tools/test.py or
# tools/dist_train.sh on a shipped config: its --cfg-options are merged into
# the config as MMEngine's DictAction merges them, and the model is built, so
# a key the model does not take (``global_ranking`` on ``MixedRankLoss``)
# fails here; the merged config keeps every hook the config ships.

SHELL_BLOCK = re.compile(r'^[ \t]*```(\w*)\n(.*?)^[ \t]*```', re.S | re.M)
SCRIPTS = ('tools/train.py', 'tools/test.py', 'tools/dist_train.sh')


def documented_commands():
    import shlex
    out = []
    pages = ['README.md'] + sorted(
        osp.relpath(p, ROOT)
        for p in glob.glob(osp.join(ROOT, 'docs', '*.md')))
    for rel in pages:
        with open(osp.join(ROOT, rel), encoding='utf-8') as f:
            text = f.read()
        for lang, block in SHELL_BLOCK.findall(text):
            if lang not in ('', 'bash', 'sh'):
                continue
            joined = re.sub(r'\\\n\s*', ' ', block)
            for line in joined.splitlines():
                line = line.split('  #')[0].strip()
                if not any(s in line for s in SCRIPTS):
                    continue
                words = shlex.split(line)
                at = next((i for i, w in enumerate(words)
                           if w in SCRIPTS), None)
                if at is None or at + 1 >= len(words):
                    continue
                config = words[at + 1]
                if osp.isfile(osp.join(ROOT, config)):
                    out.append(pytest.param(
                        config, words[at + 2:], id=f'{rel}:{config}'))
    return out


def command_options(args):
    """The ``--cfg-options`` of a command's arguments, merged as MMEngine's
    DictAction merges repeated flags."""
    import argparse

    from mmengine.config import DictAction
    parser = argparse.ArgumentParser()
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        default={})
    known, _ = parser.parse_known_args(
        [a for a in args if not a.startswith('[')])
    return known.cfg_options


def hook_types(cfg):
    # a hook given on the command line may arrive as text, not a dict
    return [h['type'] if isinstance(h, dict) else str(h)
            for h in cfg.get('custom_hooks', None) or []]


def test_the_pages_show_training_commands_with_options():
    found = documented_commands()
    assert any('global_ranking' in ' '.join(p.values[1]) for p in found), \
        'no documented command sets global_ranking: is the pattern stale?'


@pytest.mark.parametrize('config, args', documented_commands())
def test_a_documented_command_builds_its_model(config, args):
    from mmengine.config import Config

    from mmdet.registry import MODELS
    from mmdet.utils import register_all_modules
    register_all_modules()
    import mmdet_rankloss  # noqa: F401  (registers the package's modules)
    cfg = Config.fromfile(osp.join(ROOT, config))
    shipped = hook_types(cfg)
    options = command_options(args)
    cfg.merge_from_dict(options)
    MODELS.build(cfg.model)
    kept = hook_types(cfg)
    missing = [h for h in shipped if h not in kept]
    assert not missing, (f'{config} with {options} drops the hooks '
                         f'{missing} the config ships')


def test_the_hooks_table_is_the_configs_hooks():
    """docs/reliability.md's one list of the hooks each config family needs
    names exactly the hook lists the shipped configs carry."""
    with open(osp.join(ROOT, 'docs', 'reliability.md'),
              encoding='utf-8') as f:
        text = f.read()
    section = text.split('## The hooks each config needs', 1)[1]
    section = section.split('\n## ', 1)[0]
    table = set()
    for line in section.splitlines():
        cells = line.strip().strip('|').split('|')
        if len(cells) == 2 and not set(cells[0].strip()) <= set('-'):
            if cells[1].strip() == '`custom_hooks`':
                continue
            table.add(tuple(re.findall(r"type='(\w+)'", cells[1])))
    # parsed once per run (the config tests parse them too)
    configs = osp.join(ROOT, 'configs')
    shipped = {tuple(hook_types(read_config(osp.join(configs, name))))
               for name in config_files(configs, exts=('.py', ),
                                        skip_bases=True)}
    assert table == shipped, (table, shipped)
