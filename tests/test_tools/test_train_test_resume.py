"""End to end on the toy VOC: train, test and resume with this repository's
tools, train and resume with MMDetection's own ``tools/train.py``, and the
quickstart script. Each run is a subprocess, as a user would run it."""
import glob
import json
import os
import os.path as osp
import subprocess
import sys

import pytest
import torch

from rankloss_lab.mmdet_tools import mmdet_tool_path
from rankloss_lab.datasets.toy_voc import make_toy_voc

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
QUICK = osp.join(ROOT, 'configs', 'quickstart')
# Two iterations per epoch (4 images, batch 2), evaluation after each epoch.
SMALL = [
    'train_dataloader.batch_size=2', 'train_cfg.val_interval=1',
    'default_hooks.logger.interval=1'
]


def run(args, cwd):
    """Runs ``python args...`` in ``cwd`` with this checkout importable."""
    env = dict(os.environ)
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
    env.setdefault('OMP_NUM_THREADS', '1')  # tiny runs, shared CPU
    proc = subprocess.run([sys.executable] + list(args),
                          cwd=cwd,
                          env=env,
                          capture_output=True,
                          text=True)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]
    return output


def logged_ap50(work_dir):
    """AP50 values of the JSON logs under ``work_dir``, in file order."""
    values = []
    for path in sorted(glob.glob(osp.join(work_dir, '*', '**', '*.json'),
                                 recursive=True)):
        if osp.basename(path) == 'scalars.json':  # a copy of the same log
            continue
        for line in open(path):
            if 'pascal_voc/AP50' in line:
                values.append(json.loads(line)['pascal_voc/AP50'])
    return values


@pytest.fixture(scope='module')
def workspace(tmp_path_factory):
    """A downstream project: toy data under ``data/`` and a config that
    inherits the packaged RaMBO quickstart config."""
    ws = tmp_path_factory.mktemp('project')
    make_toy_voc(str(ws / 'data' / 'toy_voc' / 'VOCdevkit'),
                 num_trainval=4, num_test=2, image_size=64)
    (ws / 'my_rambo.py').write_text(
        "_base_ = 'mmdet_rankloss::quickstart/"
        "faster-rcnn_r18-w32_fpn_rambo_toyvoc.py'\n"
        # the loss's terms and diagnostics in the log, not only loss_cls
        "model = dict(roi_head=dict(bbox_head=dict(\n"
        "    loss_cls=dict(log_diagnostics=True))))\n")
    return ws


@pytest.fixture(scope='module')
def trained(workspace):
    """One epoch with ``tools/train.py``; returns the work dir."""
    work_dir = str(workspace / 'work')
    out = run([
        osp.join(ROOT, 'tools', 'train.py'), 'my_rambo.py', '--work-dir',
        work_dir, '--cfg-options', 'train_cfg.max_epochs=1'
    ] + SMALL, cwd=workspace)
    assert 'rambo_pos_grad_frac' in out  # the RaMBO loss really ran
    return work_dir


@pytest.mark.slow
def test_train_writes_checkpoint_and_evaluates(trained):
    assert osp.isfile(osp.join(trained, 'epoch_1.pth'))
    with open(osp.join(trained, 'last_checkpoint')) as f:
        assert f.read().strip().endswith('epoch_1.pth')
    ap50 = logged_ap50(trained)
    assert len(ap50) == 1 and 0.0 <= ap50[0] <= 1.0


@pytest.mark.slow
def test_test_tool_evaluates_checkpoint(workspace, trained):
    work_dir = str(workspace / 'test')
    out = run([
        osp.join(ROOT, 'tools', 'test.py'), 'my_rambo.py',
        osp.join(trained, 'epoch_1.pth'), '--work-dir', work_dir
    ], cwd=workspace)
    assert 'iou_thr: 0.5' in out  # VOCMetric's per-class table
    # Same weights, same test split: the training run's evaluation.
    assert logged_ap50(work_dir) == logged_ap50(trained)


@pytest.mark.slow
def test_resume_continues_the_run(workspace, trained):
    out = run([
        osp.join(ROOT, 'tools', 'train.py'), 'my_rambo.py', '--work-dir',
        trained, '--resume', '--cfg-options', 'train_cfg.max_epochs=2'
    ] + SMALL, cwd=workspace)
    assert 'resumed epoch: 1, iter: 2' in out
    assert 'Epoch(train) [1]' not in out and 'Epoch(train) [2]' in out
    ckpt = torch.load(
        osp.join(trained, 'epoch_2.pth'), map_location='cpu',
        weights_only=False)
    assert (ckpt['meta']['epoch'], ckpt['meta']['iter']) == (2, 4)


@pytest.mark.slow
@pytest.mark.skipif(
    tuple(int(x) for x in torch.__version__.split('.')[:2]) < (2, 6),
    reason='torch < 2.6 loads with weights_only=False by default')
def test_checkpoint_loading_needs_the_allowlist(trained):
    """torch >= 2.6 refuses MMEngine's checkpoints (``weights_only``);
    ``import mmdet_rankloss`` leaves MMEngine's loader as it is, and the
    opt-in ``mmdet_rankloss.apply_patches`` widens it, and only it."""
    ckpt = osp.join(trained, 'epoch_1.pth')
    load = ('from mmengine.runner.checkpoint import _load_checkpoint; '
            'import sys; _load_checkpoint(sys.argv[1])')
    bare = subprocess.run([sys.executable, '-c', load, ckpt],
                          capture_output=True, text=True)
    assert bare.returncode != 0 and 'weights_only' in bare.stderr
    plain = subprocess.run(
        [sys.executable, '-c', 'import mmdet_rankloss; ' + load, ckpt],
        capture_output=True, text=True)
    assert plain.returncode != 0 and 'weights_only' in plain.stderr
    out = run([
        '-c', 'import mmdet_rankloss.apply_patches, torch; ' + load +
        '; print("loaded")\n'
        'try:\n    torch.load(sys.argv[1])\n'
        'except Exception as e:\n    print(type(e).__name__)', ckpt
    ], cwd=ROOT)
    assert 'loaded' in out and 'UnpicklingError' in out


@pytest.mark.slow
def test_mmdet_own_train_tool(tmp_path, workspace):
    """MMDetection's script, config by path; the config's
    ``custom_imports`` loads the package and opts in to its patches, which
    let ``--resume`` load the checkpoint under torch >= 2.6."""
    config = str(tmp_path / 'my_rambo.py')
    with open(config, 'w') as f:
        f.write(f"_base_ = {osp.join(QUICK, 'faster-rcnn_r18-w32_fpn_rambo_toyvoc.py')!r}\n"
                "custom_imports = dict(imports=['mmdet_rankloss', "
                "'mmdet_rankloss.apply_patches'], allow_failed_imports=False)\n")
    work_dir = str(tmp_path / 'work')
    train = mmdet_tool_path('train.py')
    run([train, config, '--work-dir', work_dir, '--cfg-options',
         'train_cfg.max_epochs=1'] + SMALL, cwd=workspace)
    assert osp.isfile(osp.join(work_dir, 'epoch_1.pth'))
    out = run([train, config, '--work-dir', work_dir, '--resume',
               '--cfg-options', 'train_cfg.max_epochs=2'] + SMALL,
              cwd=workspace)
    assert 'resumed epoch: 1, iter: 2' in out
    assert osp.isfile(osp.join(work_dir, 'epoch_2.pth'))


@pytest.mark.slow
def test_quickstart_smoke(tmp_path, load_tool):
    work_dir = tmp_path / 'quickstart'
    out = run([
        osp.join(ROOT, 'tools', 'quickstart.py'), '--work-dir',
        str(work_dir), '--data-root',
        str(tmp_path / 'VOCdevkit'), '--num-trainval', '4', '--num-test',
        '2', '--losses', 'rambo', '--cfg-options',
        'train_cfg.max_epochs=1', 'train_dataloader.batch_size=2'
    ], cwd=tmp_path)
    results = json.load(open(work_dir / 'results.json'))
    quickstart = load_tool('tools/quickstart.py')
    assert [r['loss'] for r in results['rows']] == [
        'none (untrained, random init)', quickstart.LOSS_NAMES['rambo']
    ]
    assert all(0.0 <= r['ap50'] <= 1.0 for r in results['rows'])
    # what can change its numbers is recorded with them
    assert results['packages']['torch'] and len(results['data_sha256']) == 64
    # the table is the rows of results.json, as printed
    table = open(work_dir / 'results.md').read()
    assert table.split('\n\n')[0] + '\n' == quickstart.format_table(
        results['rows'], results['machine'])
    assert table.split('\n\n')[0] in out
    # a line per trained epoch, and no pkg_resources warning from the
    # tool's own config loads
    assert '[quickstart] rambo: epoch 1/1 trained' in out
    assert 'pkg_resources is deprecated' not in out


@pytest.mark.slow
def test_distributed_training_on_cpu(tmp_path, workspace):
    """Two CPU processes (gloo) started as users start them, through
    ``tools/dist_train.sh``, with the AP loss ranking the global batch.
    CUDA is hidden from them (``CUDA_VISIBLE_DEVICES=''``): with CUDA
    visible the launcher takes NCCL and ``cuda:LOCAL_RANK``, and a one-GPU
    machine has no ``cuda:1``."""
    dist_train(tmp_path, workspace, 'gloo')


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.device_count() < 2,
                    reason='NCCL needs two GPUs')
def test_distributed_training_on_two_gpus(tmp_path, workspace):
    """The same with NCCL on two GPUs (never run here: no GPU)."""
    dist_train(tmp_path, workspace, 'nccl')


def dist_train(tmp_path, workspace, backend):
    import socket
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    work_dir = str(tmp_path / 'dist')
    env = dict(os.environ, PYTHON=sys.executable, PORT=str(port),
               OMP_NUM_THREADS='1')
    env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
    if backend == 'gloo':
        env['CUDA_VISIBLE_DEVICES'] = ''
    proc = subprocess.run(
        ['bash', osp.join(ROOT, 'tools', 'dist_train.sh'), 'my_rambo.py', '2',
         '--work-dir', work_dir, '--cfg-options', 'train_cfg.max_epochs=1',
         'model.roi_head.bbox_head.loss_cls.global_ranking=True'] + SMALL,
        cwd=workspace, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert 'Distributed launcher: pytorch' in out or 'world_size: 2' in out
    assert osp.isfile(osp.join(work_dir, 'epoch_1.pth'))
    assert 'pascal_voc/AP50' in out
