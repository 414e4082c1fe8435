"""``tools/analysis/benchmark_dense_loss.py`` at toy size (one small batch,
one repeat): the speed and step parts run through the real
``RaMBORetinaHead`` and write their report. It hooks the head's
``loss_cls_all_anchors``, so a change of that hook's signature breaks it;
this test is what notices."""
import json
import os.path as osp
import subprocess
import sys

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def test_speed_and_step_parts_run_and_report(tmp_path):
    out = str(tmp_path / 'bench')
    proc = subprocess.run(
        [sys.executable, 'tools/analysis/benchmark_dense_loss.py',
         '--parts', 'speed', 'step', '--size', '64', '96', '--repeats', '1',
         '--speed-cases', 'memory0', '--steps', '1', '--out', out],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out + '.json') as f:
        report = json.load(f)
    speed = report['speed']
    # 2 images of 64 x 96 px: RetinaNet's 9 anchors per place on 5 levels
    assert speed['classes'] == 20 and speed['anchors'] > 0
    assert 0 < speed['positives'] <= speed['anchors']
    assert speed['memory0']['sort_equivalents'] > 0
    step = report['step']
    assert 0 < step['loss_share_of_rambo_step'] < 1
    assert step['rambo']['step_s'] > 0 and step['focal']['step_s'] > 0
