"""Global ranking across processes equals ranking the concatenated batch.

Started the way users start distributed training (torchrun, gloo, CPU), so
it exercises the real collectives, uneven local batch sizes included.
"""
import importlib.util
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


def test_sizes_go_between_hosts_so_no_device_is_read(monkeypatch):
    """With a device backend (NCCL), the local sizes, known on the host,
    are gathered through a gloo group of CPU tensors: the data's gather
    reads nothing back from the device (counted on the ``meta`` device,
    the CUDA path, with a stand-in for two processes)."""
    spec = importlib.util.spec_from_file_location(
        '_device_modes', ROOT / 'tests' / 'test_losses' / '_device_modes.py')
    device_modes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(device_modes)
    ShadowMeta = device_modes.ShadowMeta
    from mmdet_rankloss.ops import distributed
    other = 3  # the other process's rows
    groups, size_devices = [], []

    def all_gather(parts, tensor, group=None):
        if group is not None or tensor.device.type == 'cpu':
            size_devices.append(tensor.device.type)
            parts[0].copy_(tensor)
            parts[1].fill_(other)
        else:  # the data: this process's part, the other's as zeros
            parts[0].copy_(tensor)
            parts[1].zero_()

    monkeypatch.setattr(distributed, 'get_dist_info_safe', lambda: (0, 2))
    monkeypatch.setattr(distributed.dist, 'get_backend', lambda: 'nccl')
    monkeypatch.setattr(distributed.dist, 'get_world_size', lambda: 2)
    monkeypatch.setattr(distributed.dist, 'new_group',
                        lambda backend: groups.append(backend) or 'gloo')
    monkeypatch.setattr(distributed.dist, 'all_gather', all_gather)
    monkeypatch.setattr(distributed, '_HOST_GROUP', {})
    x = torch.randn(5, 2)
    with ShadowMeta() as meta:
        xm = meta.to_meta(x).requires_grad_(True)
        (out, labels), offset = gather_for_ranking(
            xm, meta.to_meta(torch.ones(5, dtype=torch.bool)))
        out.sum().backward()
        assert out.shape == (5 + other, 2) and labels.shape == (8, )
        torch.testing.assert_close(meta.value(out)[:5], x)
        torch.testing.assert_close(meta.value(xm.grad), torch.full((5, 2),
                                                                   2.0))
    assert meta.total == 0, meta.trace
    assert size_devices == ['cpu'] and groups == ['gloo'] and offset == 0
