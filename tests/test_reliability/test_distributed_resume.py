"""Distributed (2 CPU processes, gloo) training with global ranking through
``tools/dist_train.sh``, resumed: the checkpoint carries the score memory
of both processes, equal under global ranking, and the resumed run trains
to the end and evaluates.

The gloo runs hide CUDA from the processes (``CUDA_VISIBLE_DEVICES=''``):
with CUDA visible the launcher takes NCCL and ``cuda:LOCAL_RANK``, and a
machine with one GPU has no ``cuda:1``. The NCCL variant runs on two GPUs
or more and is skipped below (it has never run here: no GPU)."""
import os
import os.path as osp
import socket
import subprocess
import sys

import pytest
import torch

from mmdet_rankloss.utils import checkpoint_globals
from rankloss_lab.datasets.toy_voc import make_toy_voc

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG = osp.join(ROOT, 'configs', 'quickstart',
                  'faster-rcnn_r18-w32_fpn_rambo_toyvoc.py')
OPTIONS = [
    'train_dataloader.batch_size=2', 'train_dataloader.num_workers=0',
    'train_dataloader.persistent_workers=False',
    'val_dataloader.num_workers=0', 'val_dataloader.persistent_workers=False',
    'default_hooks.logger.interval=1'
]


BACKENDS = [
    'gloo',
    pytest.param('nccl', marks=pytest.mark.skipif(
        torch.cuda.device_count() < 2, reason='NCCL needs two GPUs'))
]


def dist_train(workspace, work_dir, epochs, global_ranking, *extra,
               backend='gloo'):
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHON=sys.executable, PORT=str(port),
               OMP_NUM_THREADS='1')
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
    if backend == 'gloo':
        env['CUDA_VISIBLE_DEVICES'] = ''  # CPU processes (docstring)
    proc = subprocess.run(
        ['bash', osp.join(ROOT, 'tools', 'dist_train.sh'), CONFIG, '2',
         '--work-dir', str(work_dir), *extra, '--cfg-options',
         f'train_cfg.max_epochs={epochs}', f'train_cfg.val_interval={epochs}',
         'model.roi_head.bbox_head.loss_cls.global_ranking='
         f'{global_ranking}'] + OPTIONS,
        cwd=workspace, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    return out


def memory(path):
    with torch.serialization.safe_globals(checkpoint_globals()):
        ckpt = torch.load(str(path), map_location='cpu', weights_only=True)
    return ckpt['rank_loss_memory']


@pytest.fixture(scope='module')
def workspace(tmp_path_factory):
    ws = tmp_path_factory.mktemp('ddp')
    # 8 images: 2 iterations per process and epoch at batch 2
    make_toy_voc(str(ws / 'data' / 'toy_voc' / 'VOCdevkit'),
                 num_trainval=8, num_test=2, image_size=64)
    return ws


@pytest.mark.slow
@pytest.mark.parametrize('backend', BACKENDS)
@pytest.mark.parametrize('global_ranking', [True, False])
def test_distributed_resume_keeps_every_process_memory(
        workspace, global_ranking, backend):
    work = workspace / f'global_{global_ranking}_{backend}'
    out = dist_train(workspace, work, 1, global_ranking, backend=backend)
    # auto_scale_lr: 2 processes x batch 2 against the config's 8
    assert 'Scaling the original LR by 0.5' in out
    saved = memory(work / 'epoch_1.pth')
    assert saved['world_size'] == 2
    [states] = saved['modules'].values()
    assert len(states) == 2 and len(states[0]['values']) == 2
    same = all(
        torch.equal(a, b)
        for a, b in zip(states[0]['values'], states[1]['values']))
    # global ranking: every process ranks (and remembers) the global
    # batch; local ranking: each its own RoIs
    assert same == global_ranking
    if not global_ranking:
        return
    out = dist_train(workspace, work, 2, global_ranking, '--resume',
                     backend=backend)
    assert 'resumed epoch: 1, iter: 2' in out
    assert 'has no' not in out and 'starts from rank 0' not in out
    assert 'pascal_voc/AP50' in out
    [after] = memory(work / 'epoch_2.pth')['modules'].values()
    assert len(after[0]['values']) == 4  # 2 restored + 2 new batches
    assert all(
        torch.equal(a, b) for a, b in zip(after[0]['values'],
                                          after[1]['values']))


def test_a_finished_run_is_freed_before_its_group_is_destroyed(tmp_path):
    """``close_process_group`` (after every MMDetection tool run) frees the
    DDP wrapper that a finished run leaves in a reference cycle while the
    group is still up, then destroys the group: left to the interpreter's
    teardown, the wrapper's reducer frees the gloo group and its work there
    and the process can abort (SIGABRT) after a successful run."""
    import gc
    import types
    import weakref

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from rankloss_lab.cpu_distributed import close_process_group
    dist.init_process_group('gloo', init_method=f'file://{tmp_path}/store',
                            rank=0, world_size=1)
    freed_while_up = []
    gc.disable()  # no automatic collection: only close_process_group's
    try:
        runner = types.SimpleNamespace(
            model=DistributedDataParallel(torch.nn.Linear(2, 1)))
        runner.hooks = [runner]  # a cycle, as MMEngine's runner and hooks
        runner.model(torch.ones(3, 2)).sum().backward()
        alive = weakref.ref(runner.model, lambda _: freed_while_up.append(
            dist.is_initialized()))
        del runner
        close_process_group()
        assert alive() is None and freed_while_up == [True]
        assert not dist.is_initialized()
    finally:
        gc.enable()
        if dist.is_initialized():
            dist.destroy_process_group()
