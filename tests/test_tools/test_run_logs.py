"""The MMEngine log reader shared by the tools (study, quickstart, plots)."""
import json
import os
import sys

import pytest

from rankloss_lab.run_logs import (last_record, log_files,
                                 machine_name, read_scalars,
                                 run_logged)


def write_log(path, records, mtime):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w', encoding='utf-8') as f:
        for record in records:
            f.write(json.dumps(record) + '\n')
    os.utime(path, (mtime, mtime))


@pytest.fixture
def run_dir(tmp_path):
    """A training run resumed once, and a tools/test.py evaluation."""
    root = tmp_path / 'run'
    first = [dict(lr=0.1, loss=2.0, iter=10, step=10),
             {'pascal_voc/AP50': 0.1, 'step': 1},
             {'pascal_voc/AP50': 0.2, 'step': 2}]
    resumed = [dict(lr=0.1, loss=1.0, iter=30, step=30),
               {'pascal_voc/AP50': 0.25, 'step': 2},
               {'pascal_voc/AP50': 0.3, 'step': 3}]
    write_log(str(root / 'a' / 'vis_data' / 'a.json'), first, 1000)
    # the copy MMEngine writes next to the log must not count twice
    write_log(str(root / 'a' / 'vis_data' / 'scalars.json'),
              [{'pascal_voc/AP50': 0.99, 'step': 9}], 3000)
    write_log(str(root / 'b' / 'vis_data' / 'b.json'), resumed, 2000)
    test = root / 'test'
    write_log(str(test / 'c' / 'c.json'), [{'pascal_voc/AP50': 0.4}], 2500)
    return str(root)


def test_resumed_logs_override_earlier_records(run_dir):
    assert read_scalars(run_dir, 'pascal_voc/AP50') == {
        1: 0.1, 2: 0.25, 3: 0.3}
    assert read_scalars(run_dir, 'loss', step_key='iter',
                        train_only=True) == {10: 2.0, 30: 1.0}


def test_scalars_copy_is_skipped_and_order_is_by_time(run_dir):
    names = [os.path.basename(p) for p in log_files(run_dir)]
    assert names == ['a.json', 'b.json']
    assert last_record(run_dir, 'loss')['iter'] == 30
    assert last_record(run_dir, 'missing') is None


def test_test_logs_are_read_from_their_own_dir(run_dir):
    test_dir = os.path.join(run_dir, 'test')
    assert read_scalars(test_dir, 'pascal_voc/AP50') == {0: 0.4}
    assert log_files(test_dir, train_only=True) == []


def test_run_logged_appends_and_reports_the_log_tail(tmp_path):
    log = str(tmp_path / 'run.log')
    seconds = run_logged([sys.executable, '-c', 'print("hello")'], log)
    assert seconds > 0
    with pytest.raises(RuntimeError, match='boom'):
        run_logged([sys.executable, '-c', 'raise SystemExit("boom")'], log)
    text = open(log, encoding='utf-8').read()
    assert 'hello' in text and text.count('$ ') == 2


def test_machine_name_names_device_and_torch():
    import torch
    name = machine_name()
    assert torch.__version__ in name and ('CPU' in name or 'GPU' in name
                                          or torch.cuda.is_available())


def _epoch_lines(epochs, iters=4, last_iter=None):
    lines = ['11/28 01:00:00 - mmengine - INFO - Checkpoints will be saved']
    for e in range(1, epochs + 1):
        for i in range(2, iters + 1, 2):
            lines.append(f'11/28 01:00:0{e} - mmengine - INFO - Epoch(train) '
                         f' [{e}][{i}/{iters}]  lr: 1.0e-02  loss: 1.0')
    if last_iter:
        lines.append(f'x - Epoch(train) [{epochs + 1}][{last_iter}/{iters}]')
    return '\n'.join(lines) + '\n'


def test_epochs_done_counts_finished_epochs_of_a_console_log(tmp_path):
    from rankloss_lab.run_logs import epochs_done
    log = tmp_path / 'train.log'
    assert epochs_done(str(log)) == 0  # not started
    log.write_text(_epoch_lines(3, last_iter=2))
    assert epochs_done(str(log)) == 3  # epoch 4 half done
    log.write_text(_epoch_lines(3) + 'Epoch(val) [3][8/8] pascal_voc/AP50\n')
    assert epochs_done(str(log)) == 3


def test_epoch_watcher_prints_each_new_epoch_with_an_eta(tmp_path, capsys):
    from rankloss_lab.run_logs import EpochWatcher
    a, b = tmp_path / 'a.log', tmp_path / 'b.log'
    watcher = EpochWatcher({'a': (str(a), 4), 'b': (str(b), 4)}, jobs=2,
                           prefix='[q] ')
    t0 = watcher.t0
    a.write_text('')
    b.write_text('')
    assert watcher.poll(t0) == []  # both started, nothing trained
    a.write_text(_epoch_lines(1))
    lines = watcher.poll(t0 + 10)
    # a: 1 of 4 epochs in 10 s -> 30 s left; b: 0 done at a's pace -> 40 s;
    # two jobs share the 70 s
    assert lines == ['[q] a: epoch 1/4 trained; elapsed 00:10, trainings '
                     'ETA 00:35']
    assert watcher.poll(t0 + 11) == []  # no new epoch, no line
    b.write_text(_epoch_lines(2))
    assert [line.split(';')[0] for line in watcher.poll(t0 + 20)] == [
        '[q] b: epoch 2/4 trained']
    capsys.readouterr()
