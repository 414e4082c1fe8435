"""``tools/analysis_tools/benchmark_dense_loss.py`` at toy size (one small
batch, one repeat): the speed and step parts run through the real
``RaMBORetinaHead`` and write their report. It hooks the head's
``loss_cls_all_anchors``, so a change of that hook's signature breaks it;
this test is what notices."""
import json
import os.path as osp
import subprocess
import sys

import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


@pytest.mark.slow
def test_speed_and_step_parts_run_and_report(tmp_path):
    out = str(tmp_path / 'bench')
    proc = subprocess.run(
        [sys.executable, 'tools/analysis_tools/benchmark_dense_loss.py',
         '--parts', 'speed', 'step', '--size', '64', '96', '--repeats', '1',
         '--speed-cases', 'memory0', '--steps', '1', '--out', out],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out + '.json') as f:
        report = json.load(f)
    speed = report['speed']
    # 2 images of 64 x 96 px: RetinaNet's 9 anchors per place on the levels
    # of strides 8 to 128 (8 x 12, 4 x 6, 2 x 3, 1 x 2 and 1 x 1 places)
    assert speed['classes'] == 20
    assert speed['anchors'] == 2 * 9 * (8 * 12 + 4 * 6 + 2 * 3 + 1 * 2 + 1)
    # every anchor not ignored is ranked once per class
    assert speed['ranked_scores'] == (
        speed['anchors'] - speed['ignored']) * speed['classes']
    assert 0 < speed['positives'] <= speed['anchors'] - speed['ignored']
    assert speed['memory0']['sort_equivalents'] > 0
    step = report['step']
    rambo, focal = step['rambo'], step['focal']
    # the reported ratios are those of the reported times
    assert step['loss_share_of_rambo_step'] == pytest.approx(
        rambo['loss_forward_in_step_s'] / rambo['step_s'])
    assert step['step_ratio_rambo_to_focal'] == pytest.approx(
        rambo['step_s'] / focal['step_s'])
    assert 0 < step['loss_share_of_rambo_step'] < 1
