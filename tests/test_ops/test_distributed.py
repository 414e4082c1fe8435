"""Global ranking across processes equals ranking the concatenated batch.

Started the way users start distributed training (torchrun, gloo, CPU), so
it exercises the real collectives, uneven local batch sizes included.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from mmdet_rankloss.ops import gather_for_ranking, get_dist_info_safe

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / 'tests' / 'dist_workers' / 'global_ranking_worker.py'


def test_single_process_is_identity():
    x = torch.randn(3, 2, requires_grad=True)
    (out, ), offset = gather_for_ranking(x)
    assert out is x and offset == 0
    assert get_dist_info_safe() == (0, 1)


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def _failure(proc) -> str:
    """Each rank's own lines first (torchrun prefixes them with [rankN]:):
    the rank that failed first is usually not the one whose error closes
    the log."""
    text = proc.stdout + proc.stderr
    ranks = [line for line in text.splitlines() if line.startswith('[rank')]
    return '\n'.join(ranks)[-8000:] + '\n--- tail ---\n' + text[-2000:]


@pytest.mark.slow
def test_two_gloo_processes_match_single_process(tmp_path):
    out = tmp_path / 'report.json'
    # CPU processes by design: with CUDA visible, MMEngine's logger maps
    # LOCAL_RANK 1 to a second GPU a one-GPU machine lacks (IndexError)
    env = dict(os.environ, OMP_NUM_THREADS='1', CUDA_VISIBLE_DEVICES='')
    env['PYTHONPATH'] = str(ROOT) + os.pathsep + env.get('PYTHONPATH', '')
    cmd = [
        sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node=2',
        '--master_addr=127.0.0.1', f'--master_port={_free_port()}',
        str(WORKER), str(out)
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, _failure(proc)
    report = json.loads(out.read_text())
    assert report['world'] == 2
    offsets = [r[0]['offset'] for r in report['reports']]
    assert offsets == [0, 5]
    names = [r['name'] for r in report['reports'][0]]
    for loss in ('RaMBOAPLoss', 'RaMBORecallLoss', 'FastAPLoss', 'AUCLoss',
                 'SoftRankThresholdLoss', 'BatchHardTripletLoss'):
        assert any(loss in name for name in names), (loss, names)
    for per_rank in report['reports']:
        for r in per_rank:
            assert r['loss'] == pytest.approx(r['ref_loss'], abs=1e-12), r
            assert r['grad_norm'] > 0, f"{r['name']}: no gradient to compare"
            assert r['max_grad_err'] < 1e-9, r
