"""Distributed equivalence end to end: one training step of the RaMBO
quickstart Faster R-CNN through MMEngine's Runner, as 2 gloo processes with
one image each and global ranking, updates every parameter as one process
with both images does (float32, tolerance below).

Why they can be equal at all: every other loss of the detector is a mean
over a fixed number of samples per image (256 anchors, 128 RoIs), so DDP's
average of the per-process means is the mean over the batch; the AP loss
with ``global_ranking=True`` ranks the gathered RoIs of both processes and
scales the local gradient by the world size (``gather_for_ranking``), so
DDP's average gives the single-process gradient of the AP over the whole
batch. What the worker fixes to make the runs comparable (sampling
generator, no flip or shuffle, frozen BatchNorm statistics, constant lr) is
listed in ``tests/dist_workers/ddp_step_worker.py``.

Both runs are CPU subprocesses with CUDA hidden
(``CUDA_VISIBLE_DEVICES=''``) and one intra-op thread: the tolerance below
is measured for CPU float32, and with CUDA visible the two processes would
take NCCL and ``cuda:1``, which a one-GPU machine lacks. The equivalence
under NCCL is not tested.
"""
import os
import os.path as osp
import socket
import subprocess
import sys

import pytest
import torch
from mmengine.config import Config

from mmdet.registry import MODELS
from mmdet_rankloss.utils import checkpoint_globals
from rankloss_lab.datasets.toy_voc import make_toy_voc

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
WORKER = osp.join(ROOT, 'tests', 'dist_workers', 'ddp_step_worker.py')

# float32 sums in another order (DDP's all-reduce, per-image vs batched
# convolutions): the update of each tensor may differ by RTOL of its largest
# entry, plus ULPS float32 roundings of the tensor's largest weight (the
# update is read back as after - before; measured: under 0.8 of one
# rounding, and under 4e-5 of the update for every tensor that moved more
# than 1e-4)
RTOL, ULPS = 1e-4, 2


def state(path):
    with torch.serialization.safe_globals(checkpoint_globals()):
        ckpt = torch.load(str(path), map_location='cpu', weights_only=True)
    return ckpt.get('state_dict', ckpt)


@pytest.fixture(scope='module')
def setup(tmp_path_factory, load_tool):
    worker = load_tool('tests/dist_workers/ddp_step_worker.py')
    ws = tmp_path_factory.mktemp('ddp_step')
    data_root = str(ws / 'VOCdevkit') + '/'
    # images of one size: the batch of 2 is padded as each image alone
    make_toy_voc(data_root, num_trainval=2, num_test=1, image_size=64)
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(worker.CONFIG).model)
    model.init_weights()
    init = str(ws / 'init.pth')
    torch.save(dict(state_dict=model.state_dict()), init)
    return ws, data_root, init


def cpu_env():
    """One thread, no CUDA (module docstring)."""
    env = dict(os.environ, OMP_NUM_THREADS='1', CUDA_VISIBLE_DEVICES='')
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
    return env


def single_step(setup, work_dir):
    """The whole batch (2 images) on one process."""
    ws, data_root, init = setup
    proc = subprocess.run(
        [sys.executable, WORKER, str(work_dir), data_root, init, '2'],
        cwd=str(ws), env=cpu_env(), capture_output=True, text=True,
        timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    return state(osp.join(work_dir, 'epoch_1.pth'))


def dist_step(setup, work_dir, *extra):
    ws, data_root, init = setup
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    proc = subprocess.run(
        [sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node=2',
         '--master_addr=127.0.0.1', f'--master_port={port}', WORKER,
         str(work_dir), data_root, init, '1', '--launcher', 'pytorch',
         *extra],
        cwd=str(ws), env=cpu_env(), capture_output=True, text=True,
        timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    return state(osp.join(work_dir, 'epoch_1.pth'))


@pytest.mark.slow
def test_two_processes_update_like_one(setup):
    ws, data_root, init = setup
    # one intra-op thread in both runs (cpu_env): with two, oneDNN sums the
    # convolutions' gradients in another order (1.6 % of conv1's update)
    single = single_step(setup, str(ws / 'single'))
    dist = dist_step(setup, str(ws / 'dist'), '--global-ranking')
    before = state(init)
    assert single.keys() == dist.keys()
    moved = []
    for name, start in before.items():
        if not start.is_floating_point():
            continue
        ref, got = single[name] - start, dist[name] - start
        scale = float(ref.abs().max())
        err = float((got - ref).abs().max())
        rounding = torch.finfo(start.dtype).eps * float(start.abs().max())
        assert err <= RTOL * scale + ULPS * rounding, (name, err, scale)
        if scale > 0:
            moved.append(name)
    # the step moved the rank-loss classifier and every part upstream of
    # it (a missing world-size factor in the gather would halve those)
    for name in ('roi_head.bbox_head.fc_cls.weight',
                 'roi_head.bbox_head.shared_fcs.0.weight',
                 'neck.fpn_convs.0.conv.weight', 'backbone.conv1.weight',
                 'rpn_head.rpn_conv.weight'):
        assert name in moved, name
    # frozen BatchNorm statistics (norm_eval) stay as they were
    assert not any('running_' in name for name in moved)
