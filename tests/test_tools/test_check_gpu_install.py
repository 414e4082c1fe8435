"""tools/misc/check_gpu_install.py on this (CPU-only) machine: it says that
CUDA is absent, lists what it skipped, and runs what needs no GPU."""
import json
import os
import os.path as osp
import subprocess
import sys

import pytest
import torch

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
TOOL = osp.join(ROOT, 'tools', 'misc', 'check_gpu_install.py')


def run_tool(*args):
    env = dict(os.environ, OMP_NUM_THREADS='1')
    proc = subprocess.run([sys.executable, TOOL, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.slow
def test_fast_run_says_what_it_checked_and_skipped(tmp_path):
    out_json = str(tmp_path / 'check.json')
    code, out = run_tool('--fast', '--only', 'RaMBOAPLoss', 'FastAPLoss',
                         '--json', out_json)
    assert code == 0, out[-4000:]
    rows = {r['check']: r for r in json.load(open(out_json))['rows']}
    assert rows['environment']['status'] == 'ok'
    assert rows['suite']['status'] == 'skipped'
    if torch.cuda.is_available():
        assert rows['amp RaMBOAPLoss']['status'] == 'ok'
        assert 'host syncs RaMBOAPLoss' in rows
    else:
        assert 'CUDA is not available' in out
        assert rows['amp']['status'] == 'skipped'
        assert rows['host syncs']['status'] == 'skipped'
        assert 'skipped 3 (suite, amp, host syncs)' in out


@pytest.mark.slow
def test_unknown_loss_is_refused():
    code, out = run_tool('--fast', '--only', 'NoSuchLoss')
    assert code == 2 and 'NoSuchLoss' in out
