"""``lab/rankloss_lab/analysis/input_checks_cost.py``: its 'off' mode really removes
the data checks of the losses (a NaN score then passes), its 'on' mode times
and counts them, and the tool runs end to end at toy size (times are not
asserted: a slow machine is not a failure; their ratios are)."""
import json
import math

import pytest
import torch

from mmdet_rankloss.losses import RaMBOAPLoss, average_precision_loss


def test_modes_switch_the_real_checks():
    from rankloss_lab.analysis import input_checks_cost as tool
    timer = tool.CheckTimer()
    loss = RaMBOAPLoss(memory=0)
    scores = torch.randn(6, 4)
    scores[2, 1] = math.nan
    labels = torch.tensor([0, 1, 3, 3, 2, 0])
    with timer.mode(True):
        with pytest.raises(ValueError, match='NaN or inf'):
            loss(scores, labels)
        with pytest.raises(ValueError, match='NaN or inf'):
            average_precision_loss(scores.t(), torch.ones(4, 6))
    assert timer.calls['ScoreSpace.check_inputs'] == 1
    assert timer.calls['check_scores_and_masks (AP)'] == 1
    assert timer.seconds > 0
    with timer.mode(False):
        loss(scores, labels)  # unchecked: no error
        average_precision_loss(scores.t(), torch.ones(4, 6))
    # restored afterwards
    with pytest.raises(ValueError, match='NaN or inf'):
        loss(scores, labels)


@pytest.mark.slow
def test_tool_runs(tmp_path):
    from rankloss_lab.analysis import input_checks_cost as tool
    out = tmp_path / 'overhead.json'
    result = tool.main(['--pairs', '1', '--warmup', '1', '--batch-size', '1',
                        '--image-size', '64', '--out', str(out)])
    # the file holds what the tool returned
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))
    assert result['calls_per_step']['ScoreSpace.check_inputs'] == 1
    # one pair: the medians are that pair's times, the share their ratio
    assert result['paired_diff_s'] == pytest.approx(
        result['step_on_s'] - result['step_off_s'])
    assert result['inside_checks_share'] == pytest.approx(
        result['inside_checks_s'] / result['step_on_s'])
    assert 0 < result['inside_checks_share'] < 1
    assert result['machine']['cores'] >= 1
