"""Long tools report progress with an ETA and say where results went."""
import re

import pytest

ETA = re.compile(r'(\d+)/(\d+).*elapsed \d\d:\d\d, ETA (\d\d):(\d\d)')


def eta_lines(text):
    return [m.groups() for m in map(ETA.search, text.splitlines()) if m]


def test_quickstart_eta_weights_training(load_tool, capsys, monkeypatch):
    tool = load_tool('tools/quickstart.py')
    now = [100.0]
    monkeypatch.setattr(tool.time, 'time', lambda: now[0])
    progress = tool.make_progress(['test', 'train', 'test', 'train', 'test'])
    now[0] += 30
    progress.step('untrained model evaluated', 30)
    now[0] += 200
    progress.step('rambo trained', 200)
    lines = eta_lines(capsys.readouterr().out)
    # before any training: train = TRAIN_WEIGHT tests; then as measured
    assert tool.TRAIN_WEIGHT == 10
    assert lines == [('1', '5', '11', '00'), ('2', '5', '04', '20')]
    assert tool.clock(3725) == '1:02:05'


def test_pretrain_sorter_eta_and_evaluate_out(load_tool, tmp_path, capsys):
    tool = load_tool('tools/misc/pretrain_sorter.py')
    # 10 of 100 steps in 20 s: 180 s to go, unless the time limit is nearer
    assert tool.eta(10, 100, 20.0, 0) == pytest.approx(180)
    assert tool.eta(10, 100, 20.0, 60) == pytest.approx(40)
    assert tool.eta(10, 100, 90.0, 60) == 0
    ckpt = str(tmp_path / 'lstm_d8.pth')
    tool.main(['train', '--arch', 'lstm', '--seq-len', '8', '--hidden-size',
               '4', '--num-layers', '1', '--steps', '6', '--batch-size', '8',
               '--log-interval', '3', '--val-size', '20', '--out', ckpt])
    out = capsys.readouterr().out
    assert [m[:2] for m in eta_lines(out)] == [('3', '6'), ('6', '6')]
    assert f'saved {ckpt}' in out.splitlines()[-1]
    table = str(tmp_path / 'tables' / 'table1.md')
    tool.main(['evaluate', '--seq-len', '8', '--val-size', '20', '--out',
               table, ckpt])
    out = capsys.readouterr().out
    assert [m[:2] for m in eta_lines(out)] == [('1', '2'), ('2', '2')]
    assert out.splitlines()[-1].endswith(f'table written to {table}')
    rows = open(table).read().splitlines()
    assert rows[0].startswith('| sorter |') and len(rows) == 4


def test_rank_loss_benchmark_progress(load_tool, capsys):
    from rankloss_lab.runner import Progress
    progress = Progress([1, 10, 1])
    for _ in range(3):
        progress.step()
    lines = eta_lines(capsys.readouterr().out)
    assert [line[:2] for line in lines] == [('1', '3'), ('2', '3'),
                                            ('3', '3')]
    assert lines[-1][2:] == ('00', '00')


def test_runner_eta_is_the_work_left_over_the_jobs(capsys):
    """Four runs of 100 s, two at a time: after the first, three are left,
    150 s of wall time; the runs already done are skipped."""
    from rankloss_lab.runner import Progress, run_plan
    progress = Progress([1, 1, 1, 1], ['run'] * 4, jobs=2)
    assert progress.record(100.0) == (1, 150.0)
    assert progress.record(100.0) == (2, 100.0)
    # mean 500 / 3 s, one run left, two jobs
    assert progress.record(300.0)[1] == pytest.approx(500 / 3 / 2)
    ran = run_plan([1, 2, 3], lambda i: dict(v=i), lambda i: i == 2,
                   lambda i, r: f'item {i} -> {r["v"]}', header='[t] plan',
                   prefix='[t] ')
    out = capsys.readouterr().out
    assert ran == [dict(v=1), dict(v=3)]
    assert '[t] plan: 3 runs, 1 done, 2 to run' in out
    assert '[t] 2/2 item 3 -> 3' in out
