"""The benchmark is a tool users rerun: CI runs it at toy sizes so that it
cannot rot (times are not asserted, a slow machine is not a failure)."""
import json

import pytest


@pytest.mark.slow
def test_benchmark_smoke(tmp_path, load_tool):
    bench = load_tool('tools/analysis_tools/benchmark_rank_losses.py')
    out = tmp_path / 'bench'
    result = bench.main(['--smoke', '--out', str(out)])
    saved = json.loads((tmp_path / 'bench.json').read_text())
    assert saved['machine'] == result['machine']
    for rows in saved['ap'].values():
        assert [r['length'] for r in rows] == [1_000, 10_000]
        for r in rows:  # the reported ratios are those of the reported times
            assert r['ours_over_sort'] == pytest.approx(
                r['ours']['median_s'] / r['sort']['median_s'])
            assert r['naive_over_ours'] == pytest.approx(
                r['naive']['median_s'] / r['ours']['median_s'])
    names = ' '.join(r['name'] for r in saved['retrieval'])
    for loss in ('RaMBORecallLoss', 'FastAPLoss', 'SoftRankThresholdLoss',
                 'AUCLoss', 'BatchHardTripletLoss', 'SoDeepRecallLoss'):
        assert loss in names
    detection = ' '.join(r['name'] for r in saved['detection'])
    for ranker in ('blackbox', 'sigmoid', 'sorter'):
        assert ranker in detection
    assert '| length | torch.sort |' in (tmp_path / 'bench.md').read_text()


def test_benchmark_times_only_the_devices_asked_for(tmp_path, load_tool):
    bench = load_tool('tools/analysis_tools/benchmark_rank_losses.py')
    result = bench.main(['--smoke', '--skip-others', '--devices', 'cpu-1',
                         '--out', str(tmp_path / 'bench')])
    assert list(result['ap']) == ['CPU, 1 thread']


def test_benchmark_refuses_cuda_alone_without_cuda(tmp_path, load_tool,
                                                    monkeypatch, capsys):
    bench = load_tool('tools/analysis_tools/benchmark_rank_losses.py')
    monkeypatch.setattr(bench.torch.cuda, 'is_available', lambda: False)
    with pytest.raises(SystemExit):
        bench.main(['--smoke', '--devices', 'cuda',
                    '--out', str(tmp_path / 'bench')])
    assert 'torch.cuda.is_available() is False' in capsys.readouterr().err


def test_error_driven_rows_have_the_bucketed_peer(tmp_path, load_tool):
    bench = load_tool('tools/analysis_tools/benchmark_rank_losses.py')
    result = bench.main(['--smoke', '--only-error-driven',
                         '--error-driven-lengths', '2000', '--naive-max',
                         '2000', '--out', str(tmp_path / 'bench')])
    rows = {r['mode']: r for r in result['error_driven']}
    assert set(rows) == {'rs', 'alrp', 'ap'}
    for mode in ('rs', 'ap'):  # our RS / AP-Loss vs the bucketed peer
        r = rows[mode]
        assert r['bucketed_over_ours'] == pytest.approx(
            r['bucketed']['median_s'] / r['ours']['median_s'])
    assert 'bucketed' not in rows['alrp']
    text = (tmp_path / 'bench.md').read_text()
    assert '| bucketed / ours |' in text and 'Paper numbers' in text


# --- the speed run (--speed-run) on this machine's CPU, at smoke sizes -------


@pytest.fixture(scope='module')
def speed_run(tmp_path_factory, load_tool):
    bench = load_tool('tools/analysis_tools/benchmark_rank_losses.py')
    out = tmp_path_factory.mktemp('speed') / 'speed_run'
    bench.main(['--speed-run', '--smoke', '--devices', 'cpu-all', '--out',
                str(out)])
    return (json.loads(out.with_suffix('.json').read_text()),
            out.with_suffix('.md').read_text(), bench)


@pytest.mark.slow
def test_speed_run_writes_every_section(speed_run):
    result, _, bench = speed_run
    from rankloss_lab.speed_run import FORMAT, SECTIONS
    assert result['format'] == FORMAT and result['device'] == 'cpu'
    assert result['device_name'] and result['machine']
    for section in SECTIONS + ('skipped', 'paper_numbers'):
        assert section in result, section
    assert result['skipped'] == []  # the smoke run fits its budget
    timed = {(r['loss'], r['length']) for r in result['lengths']
             if 'median_s' in r}
    assert timed == {(k, n) for k, _ in bench.LENGTH_LOSSES
                     for n in (1_000, 4_000)}
    names = ' '.join(r['name'] for r in result['per_step'])
    for loss in ('RaMBOAPLoss, 2 x', 'RaMBOAPLoss, 16 x', 'sigmoid, margin 0',
                 'RankSortLoss', 'ALRPLoss', 'RaMBORecallLoss'):
        assert loss in names
    assert all('median_s' in r for r in result['per_step'])
    shares = result['step_share']
    assert {r['loss'] for r in shares} == {'ce', 'focal', 'rambo',
                                           'rank-sort'}
    for r in shares:
        assert 'error' not in r, r
        assert 0 < sum(r['share_of_step'].values()) < 1
    amp_steps = [r for r in result['amp'] if r['name'].endswith('step')]
    assert {r['loss'] for r in amp_steps} == {'rambo-focal', 'rank-sort',
                                              'alrp'}
    assert len(result["step_share_compile"]) == 1  # eager backend, smoke
    for r in result['step_share_compile']:  # a row or its failure reason
        assert 'share_of_step' in r or r['error']


@pytest.mark.slow
def test_speed_run_markdown_is_the_docs_generator(speed_run):
    result, md, _ = speed_run
    from rankloss_lab.speed_tables import speed_section
    assert md == speed_section(result, 'speed_run.json') + '\n'
    for part in ('| torch.sort (the floor) |', 'bucketed Rank & Sort',
                 'Bucketed peer over ours', 'Paper numbers, not measured',
                 '| loss | forward + backward | under AMP',
                 '| detector | loss | step | loss shares',
                 '| detector | loss | AMP step', result['device_name']):
        assert part in md, part


def test_docs_speed_section_is_generated():
    """docs/losses.md's GPU speed section is what the generator makes of its
    JSON (``benchmark_rank_losses.py --docs write``)."""
    from rankloss_lab import speed_tables
    assert speed_tables.update_doc(write=False), (
        'docs/losses.md: GPU speed section stale; run '
        'tools/analysis_tools/benchmark_rank_losses.py --docs write')


def test_plan_skips_what_the_budget_cannot_fit():
    from rankloss_lab.speed_run import Plan
    plan = Plan(budget_s=1.0)
    plan.add('per_step', 'fits', lambda: dict(x=1), expect_s=0.1)
    plan.add('per_step', 'fails', lambda: 1 / 0, expect_s=0.1, loss='x')
    plan.add('amp', 'too long', lambda: dict(x=2), expect_s=5.0)
    result = plan.run({})
    assert [r['name'] for r in result['per_step']] == ['fits', 'fails']
    assert result['per_step'][1]['error'].startswith('ZeroDivisionError')
    assert result['per_step'][1]['loss'] == 'x'  # its fields, though failed
    assert result['amp'] == []
    assert [s['name'] for s in result['skipped']] == ['too long']


def test_full_speed_run_plans_every_item(load_tool):
    """The GPU run's plan (built, not run): every loss and peer at 100k, 1M
    and 10M, the per-step sizes, R50 step shares and AMP steps from configs
    that exist."""
    import argparse
    import os.path as osp

    from rankloss_lab.paths import ROOT
    bench = load_tool('tools/analysis_tools/benchmark_rank_losses.py')
    args = argparse.Namespace(smoke=False, budget_s=420.0, repeats=5,
                              lengths=[100_000, 1_000_000, 10_000_000])
    plan = bench.speed_run_plan(args, bench.torch.device('cpu'))
    names = {}
    for section, name, _, _ in plan.items:
        names.setdefault(section, []).append(name)
    assert len(names['lengths']) == 3 * len(bench.LENGTH_LOSSES)
    steps = ' '.join(names['per_step'])
    for case in ('2 x 512 RoIs', '16 x 512 RoIs',
                 '100,000 anchors x 80 classes, sigmoid, margin 0',
                 'RankSortLoss, dense, 100,000', 'ALRPLoss, dense, 100,000',
                 'RaMBORecallLoss log, memory 3, B 256, D 512'):
        assert case in steps, case
    configs = bench.detector_configs(smoke=False)
    for detector, loss, config in configs['share'] + configs['amp']:
        assert osp.isfile(osp.join(ROOT, config)), config
    assert {d for d, _, _ in configs['share']} == {'Faster R-CNN R50',
                                                   'ATSS R50'}
    assert len(names['amp']) == len(names['per_step']) + len(configs['amp'])
    assert len(names['step_share_compile']) == len(configs['compile'])
