"""Exact resume of the RaMBO quickstart through MMDetection's runner.

Two runs of ``tools/train.py`` on a tiny toy VOC, 2 epochs each: one
straight through, one killed with SIGKILL right after the checkpoint of
epoch 1 and resumed with ``--resume``. They must end with bitwise the same
weights and log bitwise the same losses (CPU, one thread, no data loader
workers; see docs/reliability.md for the conditions). CUDA is hidden from
the runs (``CUDA_VISIBLE_DEVICES=''``): the claim is for CPU; on a GPU the
same runs are not bitwise equal (docs/reliability.md).
"""
import glob
import json
import os
import os.path as osp
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
    'train_cfg.max_epochs=2', 'train_cfg.val_interval=1',
    'train_dataloader.batch_size=2', 'train_dataloader.num_workers=0',
    'train_dataloader.persistent_workers=False',
    'val_dataloader.num_workers=0', 'val_dataloader.persistent_workers=False',
    'default_hooks.logger.interval=1',
    'default_hooks.checkpoint.max_keep_ckpts=-1'
]
KILL_HOOK = '''
import os
import signal

from mmengine.hooks import Hook
from mmdet.registry import HOOKS


@HOOKS.register_module()
class KillAfterEpochHook(Hook):
    """SIGKILL after the checkpoint of an epoch (CheckpointHook is
    VERY_LOW, this LOWEST)."""
    priority = 'LOWEST'

    def __init__(self, epoch):
        self.epoch = epoch

    def after_train_epoch(self, runner):
        if runner.epoch + 1 == self.epoch:
            os.kill(os.getpid(), signal.SIGKILL)
'''


def train(workspace, config, work_dir, *extra):
    env = dict(os.environ, OMP_NUM_THREADS='1', CUDA_VISIBLE_DEVICES='')
    env['PYTHONPATH'] = os.pathsep.join(
        [ROOT, str(workspace), env.get('PYTHONPATH', '')])
    return subprocess.run(
        [sys.executable, osp.join(ROOT, 'tools', 'train.py'), config,
         '--work-dir', str(work_dir), *extra, '--cfg-options', *OPTIONS],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=600)


def logged(work_dir):
    """Training log records (all but the timing keys), in order."""
    records = []
    for path in sorted(glob.glob(osp.join(str(work_dir), '*', 'vis_data',
                                          '*.json'))):
        if osp.basename(path) == 'scalars.json':
            continue
        for line in open(path):
            record = json.loads(line)
            if 'loss' in record:
                records.append({
                    k: v
                    for k, v in record.items()
                    if k not in ('time', 'data_time', 'eta', 'memory')
                })
    return records


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    ws = tmp_path_factory.mktemp('resume')
    make_toy_voc(str(ws / 'data' / 'toy_voc' / 'VOCdevkit'),
                 num_trainval=4, num_test=2, image_size=64)
    (ws / 'kill_hook.py').write_text(KILL_HOOK)
    (ws / 'killed.py').write_text(
        f'_base_ = {CONFIG!r}\n'
        "custom_imports = dict(imports=['mmdet_rankloss', 'kill_hook'], "
        'allow_failed_imports=False)\n'
        "custom_hooks = [dict(type='RankLossMemoryHook'), "
        "dict(type='RandomStateHook'), "
        "dict(type='KillAfterEpochHook', epoch=1)]\n")
    straight = train(ws, CONFIG, ws / 'straight')
    assert straight.returncode == 0, straight.stderr[-4000:]
    killed = train(ws, 'killed.py', ws / 'resumed')
    resumed = train(ws, CONFIG, ws / 'resumed', '--resume')
    return ws, killed, resumed


@pytest.mark.slow
def test_killed_run_stopped_after_epoch_1(runs):
    ws, killed, _ = runs
    assert killed.returncode == -9, killed.stderr[-4000:]
    assert osp.isfile(ws / 'resumed' / 'epoch_1.pth')


@pytest.mark.slow
def test_resumed_run_continues_after_epoch_1(runs):
    ws, _, resumed = runs
    out = resumed.stdout + resumed.stderr
    assert resumed.returncode == 0, out[-4000:]
    assert 'resumed epoch: 1, iter: 2' in out
    assert 'Epoch(train) [1]' not in out and 'Epoch(train) [2]' in out


@pytest.mark.slow
def test_same_weights(runs):
    ws = runs[0]

    def weights(name):
        with torch.serialization.safe_globals(checkpoint_globals()):
            return torch.load(str(ws / name / 'epoch_2.pth'),
                              map_location='cpu', weights_only=True)
    a, b = weights('straight'), weights('resumed')
    assert a['state_dict'].keys() == b['state_dict'].keys()
    for key, value in a['state_dict'].items():
        assert torch.equal(value, b['state_dict'][key]), key
    # the checkpoints carry the loss's memory: all 4 batches (memory=7)
    memory = b['rank_loss_memory']['modules']['roi_head.bbox_head.loss_cls']
    assert len(memory[0]['values']) == 4


@pytest.mark.slow
def test_same_logged_losses(runs):
    ws = runs[0]
    straight, resumed = logged(ws / 'straight'), logged(ws / 'resumed')
    assert len(straight) == 4  # 2 epochs x 2 iterations
    assert [r['iter'] for r in resumed] == [1, 2, 3, 4]
    assert straight == resumed
