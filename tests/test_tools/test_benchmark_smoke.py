"""The benchmark is a tool users rerun: CI runs it at toy sizes so that it
cannot rot (times are not asserted, a slow machine is not a failure)."""
import json
import os
import time

import pytest

# --- the speed run on this machine's CPU, at smoke sizes --------------------


@pytest.fixture(scope='module')
def speed_run(tmp_path_factory, load_tool):
    bench = load_tool('tools/analysis_tools/benchmark_rank_losses.py')
    out = tmp_path_factory.mktemp('speed') / 'speed_run'
    start = time.perf_counter()
    bench.main(['--smoke', '--out', str(out)])
    print(f'smoke speed run: {time.perf_counter() - start:.0f} s')
    return (json.loads(out.with_suffix('.json').read_text()),
            out.with_suffix('.md').read_text(), bench)


@pytest.mark.slow
def test_speed_run_writes_every_section(speed_run):
    """Every item of the GPU run at smoke sizes, in worker processes,
    within the budget; no row failed nor compiled while timed."""
    result, _, bench = speed_run
    from rankloss_lab.speed_run import FORMAT, SECTIONS
    assert result['format'] == FORMAT and result['device'] == 'cpu'
    assert result['device_name'] and result['machine']
    for section in SECTIONS + ('skipped', 'paper_numbers', 'targets'):
        assert section in result, section
    assert result['skipped'] == []  # the smoke run fits its budget
    assert result['elapsed_s'] <= result['budget_s']
    assert len(result['worker_starts_s']) == 3  # one shared, 2 compiled
    rows = [r for s in SECTIONS for r in result[s]]
    failed = [r for r in rows if 'error' in r]
    # mmcv's CPU NMS has no fp16 kernel (its CUDA NMS has): the RPN's
    # proposals under CPU autocast stop the Faster R-CNN AMP step
    assert [(r['name'], r['where'][-1]) for r in failed] == [(
        'Faster R-CNN R18-w32, rambo, AMP step', 'mmcv/ops/nms.py:27 forward')]
    assert 'expected scalar type Float but found Half' in failed[0]['error']
    for r in rows:
        assert 'invalid' not in r and r['item_s'] > 0, r
    timed = {(r['loss'], r['length']) for r in result['lengths']}
    assert timed == {(k, n) for k, _ in bench.LENGTH_LOSSES
                     for n in (1_000, 4_000)}
    names = ' '.join(r['name'] for r in result['per_step'])
    for loss in ('RaMBOAPLoss, 2 x', 'RaMBOAPLoss, 4 x', 'sigmoid, margin 0',
                 'RankSortLoss', 'ALRPLoss', 'RaMBORecallLoss',
                 'sigmoid soft rank', 'BiLSTM sorter', 'FastAPLoss',
                 'SoftRankThresholdLoss', 'AUCLoss', 'BatchHardTripletLoss',
                 'WilcoxonLoss', 'SoDeepRecallLoss, LSTMSorter'):
        assert loss in names
    shares = result['step_share']
    assert {r['loss'] for r in shares} == {'rambo', 'rank-sort'}
    for r in shares:
        assert 0 < sum(r['share_of_step'].values()) < 1
    amp = {r['case']: r for r in result['amp'] if 'case' in r}
    assert set(amp) == {c['case'] for c in bench.per_step_cases(True)
                        if c.get('amp', True)} | {'roi_align'}
    assert all(r['grad_finite'] for r in amp.values())
    assert amp['roi_align']['out_dtype'] == 'float16'
    # mmcv's kernel computes in fp16: a bin sums up to ~64 bilinear terms,
    # each rounded at 2**-11 relative
    assert 0 < amp['roi_align']['max_rel_diff'] < 64 * 2**-11
    steps = {r['loss']: r for r in result['amp'] if 'detector' in r}
    assert set(steps) == {'rambo', 'alrp'}
    assert steps['alrp']['loss_finite'] is True
    compiled = result['per_step_compile'] + result['step_share_compile']
    assert [r.get('case') for r in compiled] == ['rambo_roi', None]
    for r in compiled:  # compiled in the warm-up, not while timed
        assert r['recompiles'] == 0 and r['warmup_calls'] >= 1, r


@pytest.mark.slow
def test_speed_run_holds_each_row_to_the_targets(speed_run):
    result, _, _ = speed_run
    from rankloss_lab.speed_run import TARGETS
    verdicts = {t['id']: t for t in result['targets']}
    assert list(verdicts) == list(TARGETS)
    for t in verdicts.values():
        assert t['rows'] >= 1, t  # at smoke sizes, every target has rows
        assert t['verdict'] == ('pass' if t['passed'] == t['rows'] else
                                'fail')
    eager = next(r for r in result['per_step'] if r['case'] == 'rambo_roi')
    held = eager['targets']['rambo_step_eager']
    assert held == dict(value=eager['median_s'], limit=1e-3,
                        passed=eager['median_s'] <= 1e-3)
    by = {(r['loss'], r['length']): r for r in result['lengths']}
    ours = by[('rambo_ap', 4_000)]
    assert ours['targets']['ap_vs_naive']['value'] == pytest.approx(
        ours['median_s'] / by[('naive_alg1', 4_000)]['median_s'])
    atss = [r for r in result['step_share'] if r['detector'].startswith(
        'ATSS')]
    assert [('dense_share_atss' in r.get('targets', {})) for r in atss] == [
        r['loss'] != 'focal' for r in atss]


@pytest.mark.slow
def test_speed_run_markdown_is_the_docs_generator(speed_run, tmp_path):
    result, md, _ = speed_run
    from rankloss_lab.speed_tables import (SPEED_JSON, speed_section,
                                           speed_table)
    assert md == speed_section(result, 'speed_run.json') + '\n'
    stamp = (f"{result['device_name']}, {result['date'][:10]}, "
             f"mmdet_rankloss {result['version']}")
    for part in ('| torch.sort (the floor) |', 'bucketed Rank & Sort',
                 'Bucketed peer over ours', 'Paper numbers, not measured',
                 f'| target ({stamp}) |', f'| loss ({stamp}) | 1,000 |',
                 f'| loss ({stamp}) | forward + backward | compiled |',
                 f'| detector ({stamp}) | loss | step |',
                 f'| detector ({stamp}) | loss | AMP step |',
                 'mmcv `RoIAlign` under fp16 autocast'):
        assert part in md, part
    json_path = tmp_path / SPEED_JSON
    json_path.parent.mkdir(parents=True)
    json_path.write_text(json.dumps(result))
    assert speed_table('docs', root=str(tmp_path)) == speed_section(
        result, 'evidence/gpu/speed_run.json')


def test_speed_section_says_plainly_that_no_gpu_run_exists(tmp_path):
    from rankloss_lab.speed_tables import SPEED_RUN_COMMAND, speed_table
    text = speed_table('docs', root=str(tmp_path))
    assert text.startswith('No speed run on a GPU is recorded')
    assert SPEED_RUN_COMMAND in text and '|' not in text


def test_plan_skips_what_the_budget_cannot_fit():
    from rankloss_lab.speed_run import Plan
    plan = Plan(budget_s=1.0)
    plan.add('per_step', 'fits', lambda: dict(x=1), expect_s=0.1)
    plan.add('per_step', 'fails', lambda: 1 / 0, expect_s=0.1, loss='x')
    plan.add('amp', 'too long', lambda: dict(x=2), expect_s=5.0)
    result = plan.run({})  # in this process
    assert [r['name'] for r in result['per_step']] == ['fits', 'fails']
    assert result['per_step'][1]['error'].startswith('ZeroDivisionError')
    assert result['per_step'][1]['loss'] == 'x'  # its fields, though failed
    assert result['amp'] == []
    assert [s['name'] for s in result['skipped']] == ['too long']


def test_time_it_times_after_the_compiles_and_marks_a_recompile():
    """Warm-up runs until a call compiles nothing; a compile among the
    timed calls (here: a new shape) makes the row invalid."""
    import torch

    from rankloss_lab.speed_run import time_it
    double = torch.compile(lambda x: x * 2, backend='eager', dynamic=False)
    cpu = torch.device('cpu')
    row = time_it(lambda: double(torch.ones(3)), cpu, repeats=3)
    assert row['recompiles'] == 0 and 'invalid' not in row
    assert row['warmup_calls'] == 2  # the compiling call, then a clean one
    # warm-up and the peak-memory call in int32, the timed calls in others
    dtypes = iter([torch.int32] * 3 + [torch.int64, torch.float64,
                                       torch.int16])
    row = time_it(lambda: double(torch.ones(3, dtype=next(dtypes))), cpu,
                  repeats=3)
    assert row['recompiles'] == 3
    assert row['invalid'].endswith('compile(s) during the timed calls')


_POISONED = []  # in a worker: whether its (pretend) device failed


def _state():
    return dict(pid=os.getpid(), poisoned=bool(_POISONED))


def isolation_plan(budget_s):
    """A plan whose items poison their worker's device, crash it, need a
    worker of their own and hang (the worker of the next test)."""
    from rankloss_lab.speed_run import Plan
    plan = Plan(budget_s)
    plan.healthy = lambda: not _POISONED

    def poison():
        _POISONED.append(True)
        raise RuntimeError('CUDA error: device-side assert triggered')

    plan.add('per_step', 'first', _state)
    plan.add('per_step', 'poison', poison)
    plan.add('per_step', 'after poison', _state)
    plan.add('per_step', 'crash', lambda: os._exit(3))
    plan.add('per_step', 'after crash', _state)
    plan.add('per_step', 'isolated', _state, isolated=True)
    plan.add('per_step', 'after isolated', _state)
    plan.add('per_step', 'hang', lambda: time.sleep(600), expect_s=0.5)
    plan.add('per_step', 'after hang', _state)
    return plan


@pytest.mark.slow
def test_a_failing_item_does_not_end_the_run():
    """A device error, a crash and a hang each end their worker, are
    recorded in their item's row, and the next item runs in a new
    worker."""
    from rankloss_lab.speed_run import worker_command
    plan = isolation_plan(300.0)
    plan.min_limit_s = 2.0  # the hang: stopped after 2 s
    result = plan.run({}, worker_command(f'{__file__}:isolation_plan',
                                         budget_s=300.0))
    rows = {r['name']: r for r in result['per_step']}
    assert list(rows) == [item[1] for item in plan.items]
    assert 'device-side assert' in rows['poison']['error']
    assert rows['poison']['device_failed']
    assert 'exit code 3' in rows['crash']['error']
    assert rows['hang']['error'] == ('stopped: ran past its limit of 2 s; '
                                     'its worker was ended')
    pid = {name: r.get('pid') for name, r in rows.items()}
    assert pid['after poison'] != pid['first'] and \
        not rows['after poison']['poisoned']
    assert pid['after crash'] != pid['after poison']
    assert len({pid['after crash'], pid['isolated'],
                pid['after isolated'], pid['after hang']}) == 4
    assert len(result['worker_starts_s']) == 6


def test_full_speed_run_plans_every_item(load_tool):
    """The GPU run's plan (built, not run): every loss and peer at 100k, 1M
    and 10M, the per-step sizes, R50 step shares, AMP steps and compiled
    items from configs that exist, expected to fit the 420 s budget with
    its compiles and worker starts."""
    import argparse
    import os.path as osp

    from rankloss_lab.paths import ROOT
    from rankloss_lab.speed_run import WORKER_START_S
    bench = load_tool('tools/analysis_tools/benchmark_rank_losses.py')
    args = argparse.Namespace(smoke=False, budget_s=420.0, repeats=5,
                              lengths=[100_000, 1_000_000, 10_000_000],
                              sections=bench.sr.SECTIONS)
    plan = bench.speed_run_plan(args, bench.torch.device('cpu'))
    assert plan.expected_s() <= args.budget_s
    assert plan.expected_s(2 * WORKER_START_S) <= args.budget_s
    names = {}
    for section, name, _, _, isolated in plan.items:
        names.setdefault(section, []).append(name)
        assert isolated == section.endswith('_compile'), name
    assert len(names['lengths']) == 3 * len(bench.LENGTH_LOSSES)
    steps = ' '.join(names['per_step'])
    for case in ('2 x 512 RoIs', '16 x 512 RoIs',
                 '100,000 anchors x 80 classes, sigmoid, margin 0',
                 'RankSortLoss, dense, 100,000', 'ALRPLoss, dense, 100,000',
                 'RaMBORecallLoss log, memory 3, B 256, D 512'):
        assert case in steps, case
    assert names['per_step_compile'] == [
        names['per_step'][0] + ', compiled (inductor)']
    configs = bench.detector_configs(smoke=False)
    for detector, loss, config in configs['share'] + configs['amp']:
        assert osp.isfile(osp.join(ROOT, config)), config
    assert {d for d, _, _ in configs['share']} == {'Faster R-CNN R50',
                                                   'ATSS R50'}
    under_amp = [c for c in bench.per_step_cases(False) if c.get('amp', True)]
    assert len(names['amp']) == len(under_amp) + 1 + len(configs['amp'])
    assert len(names['step_share_compile']) == len(configs['compile'])
    args.sections = ['lengths', 'per_step']  # a CPU run of the losses alone
    assert {item[0] for item in bench.speed_run_plan(
        args, bench.torch.device('cpu')).items} == set(args.sections)


def test_the_documented_commands_parse(load_tool):
    """Every benchmark command the docs show runs as written: its options
    are the tool's."""
    import glob
    import re
    import shlex

    from rankloss_lab.paths import ROOT
    bench = load_tool('tools/analysis_tools/benchmark_rank_losses.py')
    found = []
    for path in [os.path.join(ROOT, 'README.md')] + glob.glob(
            os.path.join(ROOT, 'docs', '**', '*.md'), recursive=True):
        with open(path, encoding='utf-8') as f:
            text = f.read()
        for args in re.findall(
                r'tools/analysis_tools/benchmark_rank_losses\.py([^`]*)`',
                text):
            found.append(args)
            bench.parse_args(shlex.split(args))
    assert len(found) >= 4, found
