"""The loss comparison tool trains, evaluates and tabulates (tiny budget)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / 'tools'))
import compare_losses  # noqa: E402


def test_every_listed_loss_is_registered():
    from mmdet.registry import MODELS
    for cfg in compare_losses.LOSSES.values():
        assert MODELS.get(cfg['type']) is not None, cfg['type']


def test_format_table_gives_mean_and_spread():
    runs = [dict(metrics={'R@1': r1, 'R@2': r1 + 10}, step_time=t)
            for r1, t in ((50.0, 0.2), (60.0, 0.4))]
    table = compare_losses.format_table({'fastap': runs}, (1, 2), [0, 1])
    assert '| fastap | 55.0 [50.0, 60.0] | 65.0 [60.0, 70.0] | 0.300 |' \
        in table


def test_two_steps_of_two_losses(tmp_path, capsys):
    out = tmp_path / 'table.md'
    results = compare_losses.main([
        '--losses', 'fastap', 'sodeep-recall', '--seeds', '0', '--epochs',
        '1', '--batches-per-epoch', '2', '--work-dir',
        str(tmp_path / 'work'), '--out', str(out)
    ])
    assert set(results) == {'fastap', 'sodeep-recall'}
    for runs in results.values():
        assert runs[0]['iters'] == 2 and runs[0]['step_time'] > 0
        assert 0 <= runs[0]['metrics']['R@1'] <= 100
    assert '| sodeep-recall |' in out.read_text()
