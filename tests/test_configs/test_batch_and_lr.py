"""Every shipped config trains the total batch and lr that its header and
docs/multi_gpu.md state, for 1, 2 and 8 processes, with and without
``tools/dist_train.sh --total-batch``; every documented
``tools/dist_train.sh`` command trains the setting it names.

* ``resolve_batch`` (lab/rankloss_lab/batch.py) is checked against
  MMEngine's own ``Runner.scale_lr`` for every config and world size.
* The header line ``# Batch: P images per process; lr L is for a total batch
  of B`` of each config and the row of docs/multi_gpu.md's table that
  matches it give P, B and L.
* The documented commands run through ``tools/dist_train.sh`` itself, with
  a stand-in interpreter that records what ``torch.distributed.run`` would
  start; the recorded ``--cfg-options`` and process count are resolved.

Configs are read with ``Config.fromfile`` only (no model, no data).
"""
import fnmatch
import functools
import os
import os.path as osp
import re
import shlex
import subprocess
import sys

import pytest

from helpers import scaled_lr  # tests/ on sys.path
from rankloss_lab.batch import (load_config, per_process_batch,
                                        ranking_losses, resolve_batch,
                                        total_batch_options)
from mmdet_rankloss.utils.config import config_files

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG_DIR = osp.join(ROOT, 'configs')
CONFIGS = config_files(CONFIG_DIR, exts=('.py', ), skip_bases=True)
PROCESSES = (1, 2, 8)
PAGE = osp.join(ROOT, 'docs', 'multi_gpu.md')
HEADER = re.compile(r'^# Batch: (\d+) images per process; lr (\S+) is for '
                    r'a total batch of (\d+),$', re.M)
#: Configs whose headers other authors keep (Rank & Sort, aLRP): their
#: ``# Batch:`` line is checked when present.
HEADER_OPTIONAL = re.compile(r'rank-sort|alrp')


@pytest.fixture(scope='module', autouse=True)
def read_mmdet_metafiles_once():
    """MMEngine reads all of MMDetection's metafiles (about 100 YAML files)
    for every ``mmdet::`` base; they do not change while the tests run."""
    from mmengine.config import utils
    original, seen = utils._get_cfg_metainfo, {}

    def once(package_path, cfg_path):
        # a config missing from the metafiles raises ValueError, on which
        # MMEngine falls back to the file itself: cache that answer too
        key = (package_path, cfg_path)
        if key not in seen:
            try:
                seen[key] = (original(package_path, cfg_path), None)
            except ValueError as e:
                seen[key] = (None, e)
        value, error = seen[key]
        if error is not None:
            raise error
        return value

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(utils, '_get_cfg_metainfo', once)
        yield


@functools.lru_cache(maxsize=None)
def load(name):
    return load_config(osp.join(CONFIG_DIR, name))


def test_every_family_is_resolved():
    families = {name.split('/')[0] for name in CONFIGS}
    assert families >= {'dense', 'digitsvoc', 'quickstart', 'rambo',
                        'rankers', 'retrieval'}


@pytest.mark.parametrize('name', CONFIGS)
def test_the_resolved_setting_is_mmengines(name):
    """For 1, 2 and 8 processes, as configured and with the config's own
    total batch split over them: the total and the lr that MMEngine uses."""
    cfg = load(name)
    base = cfg.auto_scale_lr.base_batch_size
    for n in PROCESSES:
        plan = resolve_batch(cfg, n)
        assert plan.total == n * cfg.train_dataloader.batch_size
        assert plan.lr == pytest.approx(scaled_lr(cfg, n), rel=1e-12)
        if base % n:
            with pytest.raises(ValueError, match='does not split evenly'):
                total_batch_options(cfg, base, n)
            continue
        options = total_batch_options(cfg, base, n)
        split = resolve_batch(cfg, n, options)
        assert split.total == base and split.per_process == base // n
        assert split.lr == pytest.approx(split.config_lr)
        assert scaled_lr(cfg, n, options) == pytest.approx(split.lr)
        sampler = cfg.train_dataloader.get('sampler', {})
        if sampler.get('batch_size') is not None:  # PKSampler: both batches
            assert options['train_dataloader.sampler.batch_size'] == \
                base // n


@pytest.mark.parametrize('name', CONFIGS)
def test_the_header_states_the_batch_and_lr(name):
    with open(osp.join(CONFIG_DIR, name), encoding='utf-8') as f:
        found = HEADER.findall(f.read())
    if not found and HEADER_OPTIONAL.search(name):
        pytest.skip(f'{name}: no "# Batch:" header line yet')
    assert len(found) == 1, f'{name}: expected one "# Batch: ..." line'
    per, lr, base = int(found[0][0]), float(found[0][1]), int(found[0][2])
    cfg = load(name)
    one = resolve_batch(cfg, 1)
    assert (one.per_process, one.base_batch) == (per, base), name
    assert one.config_lr == pytest.approx(lr, rel=1e-12), name
    # what a reader derives from the header and docs/multi_gpu.md
    for n in PROCESSES:
        plan = resolve_batch(cfg, n)
        assert plan.total == n * per
        assert plan.lr == pytest.approx(lr * n * per / base)


def page_table():
    """``[(globs, per-process cell, base cell, lr cell)]`` of the table of
    docs/multi_gpu.md's section "The configs"."""
    with open(PAGE, encoding='utf-8') as f:
        text = f.read()
    section = text.split('## The configs', 1)[1].split('\n## ', 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) < 4 or not cells[0].startswith('`configs/'):
            continue
        globs = re.findall(r'`(configs/[^`]+)`', cells[0])
        rows.append((globs, cells[1], cells[2], cells[3]))
    return rows


def _numbers(cell):
    return [float(x) for x in re.findall(r'(?<![\w.])\d+(?:\.\d+)?(?:e-?\d+)?',
                                         cell)]


def test_the_page_table_is_read():
    rows = page_table()
    assert len(rows) >= 5 and all(globs for globs, *_ in rows)


@pytest.mark.parametrize('name', CONFIGS)
def test_the_page_table_states_the_batch_and_lr(name):
    rows = [row for row in page_table()
            if any(fnmatch.fnmatch(f'configs/{name}', g) for g in row[0])]
    assert len(rows) == 1, f'{name}: {len(rows)} rows of the table in ' \
        'docs/multi_gpu.md match it'
    _, per_cell, base_cell, lr_cell = rows[0]
    plan = resolve_batch(load(name), 1)
    if per_cell.startswith('B'):  # "B, the PKSampler batch (60, ...)"
        assert base_cell.startswith('B')
        assert plan.per_process == plan.base_batch
        assert plan.per_process in _numbers(per_cell)
    else:
        assert plan.per_process == _numbers(per_cell)[0]
        assert plan.base_batch == _numbers(base_cell)[0]
    if 'per config' not in lr_cell:
        assert plan.config_lr in _numbers(lr_cell), (name, plan.config_lr)


# --- the documented commands ---------------------------------------------

DOCS = ['README.md'] + sorted(
    osp.join('docs', f) for f in os.listdir(osp.join(ROOT, 'docs'))
    if f.endswith('.md'))


def documented_commands():
    """``(page, command)`` of every ``tools/dist_train.sh`` command in a code
    block of the documentation that names a shipped config."""
    found = []
    for rel in DOCS:
        with open(osp.join(ROOT, rel), encoding='utf-8') as f:
            text = f.read()
        # fenced blocks, each from its opening fence (at the start of a line,
        # with its language) to its closing one, so that a block of another
        # language cannot shift the pairing of the fences
        for lang, block in re.findall(r'^[ \t]*```(\w*)\n(.*?)^[ \t]*```',
                                      text, re.S | re.M):
            if lang not in ('', 'bash', 'sh'):
                continue
            joined = re.sub(r'\\\n\s*', ' ', block)
            for line in joined.splitlines():
                line = line.split('  #')[0].strip()
                if not line.startswith('tools/dist_train.sh '):
                    continue
                config = shlex.split(line)[1]
                if osp.isfile(osp.join(ROOT, config)):
                    found.append(pytest.param(rel, line,
                                              id=f'{rel}:{config}'))
    return found


def test_the_documentation_has_multi_gpu_commands():
    pages = {p.values[0] for p in documented_commands()}
    assert {'docs/multi_gpu.md', 'docs/detection.md'} <= pages


@pytest.fixture(scope='module')
def stand_in(tmp_path_factory):
    """An interpreter for tools/dist_train.sh that records the arguments of
    ``-m torch.distributed.run`` and runs everything else with this
    Python."""
    folder = tmp_path_factory.mktemp('stand_in')
    record = folder / 'argv'
    script = folder / 'python'
    script.write_text(
        '#!/usr/bin/env bash\n'
        'if [[ "$1" == -m && "$2" == torch.distributed.run ]]; then\n'
        f'    printf "%s\\n" "$@" > {shlex.quote(str(record))}; exit 0\n'
        'fi\n'
        f'exec {shlex.quote(sys.executable)} -W ignore "$@"\n')
    script.chmod(0o755)
    return script, record


def launched(stand_in, command):
    """``(processes, train.py arguments)`` that ``command`` starts."""
    script, record = stand_in
    if record.exists():
        record.unlink()
    args = shlex.split(command)
    env = dict(os.environ, PYTHON=str(script))
    env.pop('NNODES', None)
    proc = subprocess.run(['bash'] + args, cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    argv = record.read_text().splitlines()
    nproc = int(next(a for a in argv if a.startswith('--nproc_per_node='))
                .split('=')[1])
    script_at = next(i for i, a in enumerate(argv)
                     if a.endswith('tools/train.py'))
    return nproc, argv[script_at + 1:], proc.stderr


def cfg_options(train_args):
    """The ``--cfg-options`` of train.py arguments, merged as MMEngine's
    DictAction merges repeated flags."""
    import argparse

    from mmengine.config import DictAction
    parser = argparse.ArgumentParser()
    parser.add_argument('config')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        default={})
    args, _ = parser.parse_known_args(train_args)
    return args.config, args.cfg_options


@pytest.mark.slow
@pytest.mark.parametrize('page, command', documented_commands())
def test_a_documented_command_trains_the_setting_it_names(
        page, command, stand_in):
    processes, train_args, log = launched(stand_in, command)
    config, options = cfg_options(train_args)
    cfg = load_config(osp.join(ROOT, config))
    plan = resolve_batch(cfg, processes, options)
    assert plan.total == plan.base_batch, (
        f'{page}: `{command}` trains a total batch of {plan.total}, the '
        f'config is for {plan.base_batch}')
    assert plan.lr == pytest.approx(plan.config_lr), (page, command)
    assert plan.lr == pytest.approx(scaled_lr(cfg, processes, options))
    # a setting of one process, split over several: every rank loss must
    # rank the whole batch, as the one process did
    if processes > 1 and plan.base_batch == cfg.train_dataloader.batch_size:
        from mmengine.config import Config
        merged = Config(cfg.to_dict())
        merged.merge_from_dict(options)
        local = [p for p, g in ranking_losses(merged.model) if not g]
        assert not local, (f'{page}: `{command}` splits a one-process batch '
                           f'but {local} rank each process\'s slice only')
        assert 'ranks each process' not in log


@pytest.mark.slow
def test_dist_train_refuses_an_uneven_split(stand_in):
    script, _ = stand_in
    proc = subprocess.run(
        ['bash', 'tools/dist_train.sh',
         'configs/rambo/faster-rcnn_r50_fpn_ce_1x_voc0712.py', '3',
         '--total-batch', '8'],
        cwd=ROOT, env=dict(os.environ, PYTHON=str(script)),
        capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert 'does not split evenly over 3 processes' in proc.stderr


@pytest.mark.slow
def test_dist_train_counts_every_node_and_notes_local_ranking(stand_in):
    """With NNODES machines the total is split over GPUS x NNODES
    processes; a rank loss that ranks per process is pointed out."""
    script, record = stand_in
    proc = subprocess.run(
        ['bash', 'tools/dist_train.sh',
         'configs/rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py', '2',
         '--total-batch=8', '--work-dir', 'w'],
        cwd=ROOT, env=dict(os.environ, PYTHON=str(script), NNODES='2'),
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    argv = record.read_text().splitlines()
    assert '--nnodes=2' in argv and argv[-2:] == [
        '--cfg-options', 'train_dataloader.batch_size=2']
    assert '--work-dir' in argv and '--total-batch=8' not in argv
    assert 'ranks each process\'s 2 image(s) only' in proc.stderr


def test_per_process_batch():
    assert per_process_batch(8, 8) == 1 and per_process_batch(16, 4) == 4
    with pytest.raises(ValueError, match='use 1, 2, 4, 8 processes'):
        per_process_batch(8, 3)
    with pytest.raises(ValueError, match='an int >= 1'):
        per_process_batch(8, 0)


def test_resolve_without_auto_scale_lr():
    cfg = load('rambo/faster-rcnn_r50_fpn_rambo_1x_voc0712.py')
    plan = resolve_batch(cfg, 8, {'auto_scale_lr.enable': False})
    assert (plan.total, plan.lr, plan.scaled) == (64, 0.1, False)
    assert scaled_lr(cfg, 8, {'auto_scale_lr.enable': False}) == 0.1
